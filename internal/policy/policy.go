/*
Copyright 2026 The Sandbar Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package policy is the call policies, pure: a CallPolicy or ClusterCallPolicy
// compiled (its CEL within the API server's cost limits, or the reason it is
// broken), the set every replica holds, the match of a call against it and the
// decision its rules take. It reads nothing from the cluster: the MCP server hands
// it the call as it sees it, and the decision needs no API call.
package policy

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	celdecls "github.com/google/cel-go/common/decls"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// Call is a tool call as policies see it: the variable call of their expressions.
type Call struct {
	// Tool is the served name, Canonical the dotted one (sandbar.entity.create).
	Tool, Canonical string
	// Verb is what the call does: create, update, delete, read, start, transition,
	// cancel, import, export, validate or define. Verbs are the verbs it matches
	// policies as: Verb, and for an item of an import create and update too (it
	// writes an instance as they do).
	Verb  string
	Verbs []string
	// Class is the class the call acts on (prefix/Kind), and Classes it and every
	// class it inherits from: a policy on a class matches its subclasses' calls.
	Class   string
	Classes []string
	// Namespace is where the call acts, and NamespaceLabels that namespace's labels.
	Namespace       string
	NamespaceLabels map[string]string
	// Name is the instance (or process) the call names, if any.
	Name string
	// Arguments are the call's arguments as the client sent them (without confirm),
	// Attributes the slot values it writes (whatever the tool: a class's own tool,
	// sandbar_entity_create, the attributes of an update, an item of an import).
	Arguments  map[string]any
	Attributes map[string]any
	// ArgumentsFit says the caller found Arguments within the sizes the cost
	// estimates assume (Fits), once for every act of a call, which share them (an
	// import's bundle); false: Decide measures them.
	ArgumentsFit bool
	// Object is the stored instance an update or delete acts on (its spec is the
	// slots), when a policy asks for it; nil otherwise.
	Object map[string]any
	// Confirmed says the call came with confirm: true (the model's word that its
	// user agreed, never a control).
	Confirmed bool
}

// Identity is who calls: the variable identity.
type Identity struct {
	// Account is the Sandbar ServiceAccount (namespace/name); for a person signed in
	// with OAuth, the account the server made for them.
	Account string
	// User and Groups are the Kubernetes identity the call acts as.
	User   string
	Groups []string
	// Client is the name the MCP client gave in initialize (clientInfo.name).
	Client string
}

// Request is the variable request: the protocol revision and the time.
type Request struct {
	Revision string
	Time     time.Time
}

// The verbs of Call.Verb.
const (
	VerbCreate     = "create"
	VerbUpdate     = "update"
	VerbDelete     = "delete"
	VerbRead       = "read"
	VerbStart      = "start"
	VerbTransition = "transition"
	VerbCancel     = "cancel"
	VerbImport     = "import"
	VerbExport     = "export"
	VerbValidate   = "validate"
	VerbDefine     = "define"
)

// rule is a compiled rule: program tracks its cost as it runs and stops it at
// the API server's limit; fast does not, and runs only on a call whose values are
// all within the sizes its estimate assumed, where that estimate bounds the cost.
type rule struct {
	metav1alpha1.CallRule
	program, fast cel.Program
}

// Policy is a CallPolicy or ClusterCallPolicy as compiled: ready to decide, or
// broken with the reason (Err), in which case none of its rules applies and its
// failurePolicy says what the calls it matches meet.
type Policy struct {
	// Namespace is the CallPolicy's ("" for a ClusterCallPolicy): it governs only
	// the calls that act there.
	Namespace, Name string
	Generation      int64
	Spec            metav1alpha1.CallPolicySpec
	// Err is why the policy cannot be applied (a rule does not compile, or costs
	// too much; a selector does not parse); Reason is the condition reason.
	Err    error
	Reason string
	// UsesObject says whether a rule reads call.object: the stored instance is read
	// only for the policies that look at it.
	UsesObject bool
	rules      []rule
	namespaces labels.Selector
}

// Key names the policy in counts and decisions: namespace/name, or name for a
// ClusterCallPolicy.
func (p *Policy) Key() string {
	if p.Namespace == "" {
		return p.Name
	}
	return p.Namespace + "/" + p.Name
}

// Kind is the policy's kind.
func (p *Policy) Kind() string {
	if p.Namespace == "" {
		return "ClusterCallPolicy"
	}
	return "CallPolicy"
}

// Enforced says whether the policy's decisions are applied (Enforce), not only
// recorded (Audit).
func (p *Policy) Enforced() bool { return p.Spec.Enforcement != metav1alpha1.EnforcementAudit }

// FailOpen says whether calls pass while the policy cannot be applied.
func (p *Policy) FailOpen() bool { return p.Spec.FailurePolicy == metav1alpha1.FailurePolicyIgnore }

// estimateSize is the size the estimate of an expression's cost assumes for
// what it reads, which has no schema to bound it: lists and maps of at most
// estimateSize entries, strings of at most estimateSize bytes. An expression whose
// worst case over such a call is over the API server's limit of one expression
// does not compile, nor a policy whose rules' worst cases together are over its
// budget of one policy. A call within these sizes is evaluated without counting
// (its cost is bounded by the estimate); a bigger one is counted as it runs and
// held to those limits, as the API server holds its expressions.
const estimateSize = 1000

// env is the expressions' environment: the API server's base (its libraries and
// per-call cost limit), with call, identity and request. Every rule is compiled,
// estimated and made a counted program in it.
var env = func() *cel.Env {
	set, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Extend(environment.VersionedOptions{
		IntroducedVersion: environment.DefaultCompatibilityVersion(),
		EnvOptions: []cel.EnvOption{
			cel.Variable("call", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("identity", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("request", cel.MapType(cel.StringType, cel.DynType)),
		},
	})
	if err != nil {
		panic(fmt.Sprintf("the call policies' CEL environment: %v", err)) // a programming error, found by any test
	}
	e, err := set.Env(environment.StoredExpressions)
	if err != nil {
		panic(fmt.Sprintf("the call policies' CEL environment: %v", err))
	}
	return e
}()

// fastEnv has env's functions, with their implementations, and none of its
// program options: its programs do not count their cost (the API server's base
// turns counting on for every program of env, and it costs more than the rest of
// an evaluation). A rule checked in env is planned in it as in env.
var fastEnv = func() *cel.Env {
	fns := env.Functions()
	decls := make([]*celdecls.FunctionDecl, 0, len(fns))
	for _, fn := range fns {
		decls = append(decls, fn)
	}
	e, err := cel.NewCustomEnv(cel.FunctionDecls(decls...), cel.VariableDecls(env.Variables()...),
		cel.CustomTypeAdapter(env.CELTypeAdapter()), cel.CustomTypeProvider(env.CELTypeProvider()))
	if err != nil {
		panic(fmt.Sprintf("the call policies' CEL environment: %v", err))
	}
	return e
}()

// fastOptions are env's program options but counting: its optimizations.
var fastOptions = []cel.ProgramOption{
	cel.EvalOptions(cel.OptOptimize),
	cel.OptimizeRegex(library.FindRegexOptimization, library.FindAllRegexOptimization),
}

// sizes gives the cost estimate the sizes of what an expression reads.
type sizes struct{}

func (sizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if n.ComputedSize() != nil {
		return nil
	}
	return &checker.SizeEstimate{Min: 0, Max: estimateSize}
}

func (sizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// Compile compiles a policy. It never fails: a policy that cannot be applied comes
// back with Err set, and no rule of it compiled.
func Compile(namespace, name string, generation int64, spec metav1alpha1.CallPolicySpec) *Policy {
	p := &Policy{Namespace: namespace, Name: name, Generation: generation, Spec: spec}
	fail := func(reason string, format string, args ...any) *Policy {
		p.Err, p.Reason, p.rules = fmt.Errorf(format, args...), reason, nil
		return p
	}
	p.namespaces = labels.Everything()
	if s := spec.Match.NamespaceSelector; s != nil {
		sel, err := metav1.LabelSelectorAsSelector(s)
		if err != nil {
			return fail(metav1alpha1.ReasonCompileError, "match.namespaceSelector: %v", err)
		}
		p.namespaces = sel
	}
	if len(spec.Rules) == 0 {
		return fail(metav1alpha1.ReasonCompileError, "the policy has no rules")
	}
	var total uint64
	for i, r := range spec.Rules {
		switch r.Action {
		case metav1alpha1.ActionDeny, metav1alpha1.ActionAudit:
			if r.Approval != nil {
				return fail(metav1alpha1.ReasonCompileError, "rules[%d] (%s): approval is for a RequireApproval rule, not %s", i, r.Name, r.Action)
			}
		case metav1alpha1.ActionRequireApproval:
			if err := checkApproval(r.Approval); err != nil {
				return fail(metav1alpha1.ReasonCompileError, "rules[%d] (%s): %v", i, r.Name, err)
			}
		default:
			return fail(metav1alpha1.ReasonCompileError, "rules[%d] (%s): unknown action %q: Deny, RequireApproval or Audit", i, r.Name, r.Action)
		}
		expr := r.Expression
		if strings.TrimSpace(expr) == "" {
			expr = "true"
		}
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			return fail(metav1alpha1.ReasonCompileError, "rules[%d] (%s): %s", i, r.Name, iss.Err())
		}
		if !ast.OutputType().IsExactType(cel.BoolType) && !ast.OutputType().IsExactType(cel.DynType) {
			return fail(metav1alpha1.ReasonCompileError, "rules[%d] (%s): the expression is a %s, not a bool", i, r.Name, ast.OutputType())
		}
		est, err := env.EstimateCost(ast, &library.CostEstimator{SizeEstimator: sizes{}})
		if err != nil {
			return fail(metav1alpha1.ReasonCompileError, "rules[%d] (%s): estimating its cost: %v", i, r.Name, err)
		}
		if est.Max > celconfig.PerCallLimit {
			return fail(metav1alpha1.ReasonTooCostly, "rules[%d] (%s): its worst-case cost, %d, is over the limit of one expression, %d (the API server's): "+
				"iterate over less, or bound what it iterates over with a size check first", i, r.Name, est.Max, celconfig.PerCallLimit)
		}
		if total += est.Max; total > celconfig.RuntimeCELCostBudget {
			return fail(metav1alpha1.ReasonTooCostly, "the rules' worst-case cost together, %d at rules[%d] (%s), is over the limit of one policy, %d (the API server's)",
				total, i, r.Name, celconfig.RuntimeCELCostBudget)
		}
		prog, err := env.Program(ast)
		if err != nil {
			return fail(metav1alpha1.ReasonCompileError, "rules[%d] (%s): %v", i, r.Name, err)
		}
		fast, err := fastEnv.Program(ast, fastOptions...)
		if err != nil {
			return fail(metav1alpha1.ReasonCompileError, "rules[%d] (%s): %v", i, r.Name, err)
		}
		p.rules = append(p.rules, rule{CallRule: r, program: prog, fast: fast})
		p.UsesObject = p.UsesObject || strings.Contains(expr, "object")
	}
	return p
}

// The bounds of how long a held call waits.
const (
	DefaultApprovalWait = time.Hour
	MaxApprovalWait     = 7 * 24 * time.Hour
)

// checkApproval checks a RequireApproval rule's approval.
func checkApproval(a *metav1alpha1.ApprovalRequirement) error {
	switch {
	case a == nil:
		return fmt.Errorf("a RequireApproval rule needs approval: the users or groups who may approve")
	case len(a.Users) == 0 && len(a.Groups) == 0:
		return fmt.Errorf("approval names no users and no groups: nobody could approve")
	case a.ExpiresAfter != nil && (a.ExpiresAfter.Duration <= 0 || a.ExpiresAfter.Duration > MaxApprovalWait):
		return fmt.Errorf("approval.expiresAfter %s is not within (0, %s]", a.ExpiresAfter.Duration, MaxApprovalWait)
	}
	return nil
}

// Wait is how long a call a rule holds waits for its approvals.
func Wait(a *metav1alpha1.ApprovalRequirement) time.Duration {
	if a == nil || a.ExpiresAfter == nil {
		return DefaultApprovalWait
	}
	return a.ExpiresAfter.Duration
}

// Matches says whether the policy governs a call.
func (p *Policy) Matches(c *Call, id *Identity) bool {
	m := p.Spec.Match
	if p.Namespace != "" && c.Namespace != p.Namespace {
		return false
	}
	if len(m.Tools) > 0 && !slices.ContainsFunc(m.Tools, func(g string) bool { return glob(g, c.Tool) || glob(g, c.Canonical) }) {
		return false
	}
	if len(m.Verbs) > 0 && !slices.ContainsFunc(m.Verbs, func(v string) bool { return v == c.Verb || slices.Contains(c.Verbs, v) }) {
		return false
	}
	if len(m.Classes) > 0 && !slices.ContainsFunc(m.Classes, func(cl string) bool { return slices.Contains(c.Classes, cl) }) {
		return false
	}
	if m.NamespaceSelector != nil && (c.Namespace == "" || !p.namespaces.Matches(labels.Set(c.NamespaceLabels))) {
		return false
	}
	if len(m.Accounts) > 0 && !slices.ContainsFunc(m.Accounts, func(g string) bool { return glob(g, id.Account) }) {
		return false
	}
	if len(m.Users) > 0 && !slices.Contains(m.Users, id.User) {
		return false
	}
	if len(m.Groups) > 0 && !slices.ContainsFunc(m.Groups, func(g string) bool { return slices.Contains(id.Groups, g) }) {
		return false
	}
	return true
}

// glob matches a name against a pattern of path.Match (as permissions.tools).
func glob(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}

// Outcome is what one policy decided on a call.
type Outcome struct {
	Policy *Policy
	// Rule is the rule that decided ("" when the policy failed before one did).
	Rule string
	// Approval is who may approve a call a RequireApproval rule holds.
	Approval *metav1alpha1.ApprovalRequirement
	// Action is what the rule does: Deny or Audit; for a policy that failed, Deny
	// under failurePolicy Fail and Audit under Ignore.
	Action string
	// Enforced: the action applies (Audit enforcement only records it).
	Enforced bool
	// Message is what the caller is told of a denial (the rule's message, or the
	// failure); Err the failure, if the policy could not be applied.
	Message string
	Err     error
}

// Denies says whether the outcome refuses the call.
func (o Outcome) Denies() bool { return o.Enforced && o.Action == metav1alpha1.ActionDeny }

// Holds says whether the outcome holds the call for approval.
func (o Outcome) Holds() bool { return o.Enforced && o.Action == metav1alpha1.ActionRequireApproval }

// Decision is what the set decided on a call: every policy that matched it, and
// each outcome of their rules.
type Decision struct {
	// Matched are the policies that matched the call.
	Matched []*Policy
	// Outcomes are the rules that took an action (or would have, under Audit
	// enforcement), and the policies that failed, in order.
	Outcomes []Outcome
}

// Denial is the first outcome that refuses the call, if any.
func (d *Decision) Denial() (Outcome, bool) {
	for _, o := range d.Outcomes {
		if o.Denies() {
			return o, true
		}
	}
	return Outcome{}, false
}

// Hold is the first outcome that holds the call for approval, if none refuses it.
func (d *Decision) Hold() (Outcome, bool) {
	if _, denied := d.Denial(); denied {
		return Outcome{}, false
	}
	for _, o := range d.Outcomes {
		if o.Holds() {
			return o, true
		}
	}
	return Outcome{}, false
}

// Text is what a caller the outcome refuses is told: the rule's words, and the
// policy and rule behind them, so the model can say what it met and a person can
// find it with kubectl.
func (o Outcome) Text() string {
	where := fmt.Sprintf("%s %s", o.Policy.Kind(), o.Policy.Key())
	if o.Rule != "" {
		where += ", rule " + o.Rule
	}
	msg := o.Message
	if msg == "" {
		msg = "the call is not allowed"
	}
	return fmt.Sprintf("denied by %s: %s", where, msg)
}

// Set is the policies every replica holds, compiled.
type Set struct {
	policies []*Policy
}

// NewSet is a set of policies.
func NewSet(policies []*Policy) *Set {
	slices.SortFunc(policies, func(a, b *Policy) int { return strings.Compare(a.Key(), b.Key()) })
	return &Set{policies: policies}
}

// Len is how many policies the set holds.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.policies)
}

// SelectsNamespaces says whether a policy of the set selects namespaces by their
// labels: only then does a call's namespace need reading.
func (s *Set) SelectsNamespaces() bool {
	if s == nil {
		return false
	}
	for _, p := range s.policies {
		if p.Spec.Match.NamespaceSelector != nil {
			return true
		}
	}
	return false
}

// MayMatch says whether a policy of the set may govern a call of a tool (its name
// as served, and its canonical name) whose verb is verb ("": any verb, as when the
// call's arguments say its verbs): a call that none may match need not be read
// further.
func (s *Set) MayMatch(tool, canonical, verb string) bool {
	for _, p := range s.policies {
		m := p.Spec.Match
		if len(m.Tools) > 0 && !slices.ContainsFunc(m.Tools, func(g string) bool { return glob(g, tool) || glob(g, canonical) }) {
			continue
		}
		if verb != "" && len(m.Verbs) > 0 && !slices.Contains(m.Verbs, verb) {
			continue
		}
		return true
	}
	return false
}

// Matching are the policies that govern a call.
func (s *Set) Matching(c *Call, id *Identity) []*Policy {
	if s == nil {
		return nil
	}
	var out []*Policy
	for _, p := range s.policies {
		if p.Matches(c, id) {
			out = append(out, p)
		}
	}
	return out
}

// Decide evaluates the rules of the matching policies (as Matching gives them) for a
// call. Within a policy, rules run in order and a Deny that applies ends it; an
// error in a rule is the policy's failure.
func Decide(matched []*Policy, c *Call, id *Identity, req Request) *Decision {
	d := &Decision{Matched: matched}
	if len(matched) == 0 {
		return d
	}
	// One activation for every rule of every policy: the variables are made once
	// (the groups a CEL list once, not at each rule that reads them), and measured
	// once against the sizes the estimates assumed.
	call := callVar(c)
	identity := map[string]any{"account": id.Account, "user": id.User, "client": id.Client}
	argumentsFit := c.ArgumentsFit || Fits(c.Arguments)
	counted := forceCounted || !argumentsFit || !Fits(call) || !Fits(identity) || !Fits(id.Groups) || len(req.Revision) > estimateSize
	call["arguments"] = orEmptyMap(c.Arguments) // measured above (or by the caller)
	identity["groups"] = types.NewStringList(types.DefaultTypeAdapter, orEmpty(id.Groups))
	vars, err := interpreter.NewActivation(map[string]any{
		"call":     call,
		"identity": identity,
		"request":  map[string]any{"revision": req.Revision, "time": req.Time},
	})
	if err != nil {
		for _, p := range matched {
			d.Outcomes = append(d.Outcomes, failed(p, err))
		}
		return d
	}
	for _, p := range matched {
		d.Outcomes = append(d.Outcomes, evaluate(p, vars, counted)...)
	}
	return d
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func callVar(c *Call) map[string]any {
	v := map[string]any{
		"tool": c.Tool, "canonical": c.Canonical, "verb": c.Verb, "class": c.Class, "classes": orEmpty(c.Classes),
		"namespace": c.Namespace, "name": c.Name, "confirmed": c.Confirmed, "attributes": orEmptyMap(c.Attributes),
	}
	if c.Object != nil {
		v["object"] = c.Object
	}
	return v
}

func orEmptyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// failed is the outcome of a policy that cannot be applied: its failurePolicy's.
func failed(p *Policy, err error) Outcome {
	action := metav1alpha1.ActionDeny
	if p.FailOpen() {
		action = metav1alpha1.ActionAudit
	}
	return Outcome{Policy: p, Action: action, Enforced: p.Enforced(), Err: err,
		Message: fmt.Sprintf("the policy cannot be applied (failurePolicy %s): %v", cmp.Or(p.Spec.FailurePolicy, metav1alpha1.FailurePolicyFail), err)}
}

// forceCounted makes every evaluation counted: the baseline of a benchmark.
var forceCounted bool

// Fits says whether a variable's values are all within the sizes the
// cost estimates assumed: every list and map of at most estimateSize entries and
// every string of at most estimateSize bytes (a string's size in CEL is in code
// points, never more than its bytes). A value of a kind it does not know is not.
func Fits(v any) bool {
	switch v := v.(type) {
	case nil, bool, float64, int64, int, time.Time:
		return true
	case string:
		return len(v) <= estimateSize
	case []string:
		return len(v) <= estimateSize && !slices.ContainsFunc(v, func(s string) bool { return len(s) > estimateSize })
	case []any:
		return len(v) <= estimateSize && !slices.ContainsFunc(v, func(e any) bool { return !Fits(e) })
	case map[string]any:
		if len(v) > estimateSize {
			return false
		}
		for k, e := range v {
			if len(k) > estimateSize || !Fits(e) {
				return false
			}
		}
		return true
	}
	return false
}

// evaluate runs one policy's rules: counted, each held to the API server's limit
// of one expression and all to its budget of one policy as they run; or not, when
// the call is within the sizes the estimates assumed, which Compile held to both.
func evaluate(p *Policy, vars interpreter.Activation, counted bool) []Outcome {
	if p.Err != nil {
		return []Outcome{failed(p, p.Err)}
	}
	var out []Outcome
	var cost uint64
	for _, r := range p.rules {
		prog := r.fast
		if counted {
			prog = r.program
		}
		val, det, err := prog.Eval(vars)
		if det != nil && det.ActualCost() != nil {
			cost += *det.ActualCost()
		}
		if err == nil && cost > celconfig.RuntimeCELCostBudget {
			err = fmt.Errorf("the rules' cost, %d, is over the limit of one policy, %d", cost, celconfig.RuntimeCELCostBudget)
		}
		if err != nil {
			return []Outcome{failed(p, fmt.Errorf("rule %s: %w", r.Name, err))}
		}
		hit, ok := val.Value().(bool)
		if !ok {
			return []Outcome{failed(p, fmt.Errorf("rule %s: the expression gave a %s, not a bool", r.Name, val.Type()))}
		}
		if !hit {
			continue
		}
		o := Outcome{Policy: p, Rule: r.Name, Action: r.Action, Enforced: p.Enforced(), Message: r.Message, Approval: r.Approval}
		out = append(out, o)
		if o.Denies() {
			break
		}
	}
	return out
}

// Store holds the newest set, read lock-free.
type Store struct{ set atomic.Pointer[Set] }

// Load is the newest set (nil before the first).
func (s *Store) Load() *Set { return s.set.Load() }

// Publish makes a set the newest.
func (s *Store) Publish(set *Set) { s.set.Store(set) }
