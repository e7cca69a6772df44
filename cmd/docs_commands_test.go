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

package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/instanceapi"
)

// Every command of the docs' shell blocks (```sh, ```bash, ```shell, ```console) and
// every inline `make ...` or `go test ...` is checked here as far as it can be
// without a cluster: make targets exist; go test names packages that exist and
// patterns that match a test, benchmark or fuzz target there; the manager's and
// Helm's --set flags exist; kubectl names resources that exist; repository paths
// exist. What a command does against a cluster is not run.

// docCommand is one command of the docs, where it was found.
type docCommand struct {
	where string
	argv  []string
}

func TestDocsCommands(t *testing.T) {
	k := loadKnowledge(t)
	files := docFiles(t)
	n := 0
	for _, f := range files {
		for _, c := range commandsOf(t, f) {
			n++
			if testing.Verbose() {
				t.Log(c.where, c.argv)
			}
			for _, problem := range k.check(c.argv) {
				t.Errorf("%s: %s: %s", c.where, strings.Join(c.argv, " "), problem)
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d commands found in the docs: is the parser broken?", n)
	}
}

// docFiles are README.md and every Markdown file under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(repoRoot, "README.md")}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

var (
	fence      = regexp.MustCompile("^\\s*(```+)\\s*([A-Za-z0-9_-]*)")
	inlineCode = regexp.MustCompile("`([^`]+)`")
	shellInfos = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}
	hereDoc    = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_]+)['"]?`)
)

// commandsOf reads a Markdown file's shell blocks and inline commands.
func commandsOf(t *testing.T, path string) []docCommand {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	rel, _ := filepath.Rel(repoRoot, path)
	var out []docCommand
	add := func(line int, text string) {
		for _, argv := range splitCommands(text) {
			out = append(out, docCommand{where: fmt.Sprintf("%s:%d", filepath.ToSlash(rel), line), argv: argv})
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	inBlock, shell, console := false, false, false
	var fenceMark string
	pending, pendingLine := "", 0
	heredoc := "" // the word that ends the here-document being skipped
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if heredoc != "" {
			if strings.TrimSpace(text) == heredoc {
				heredoc = ""
			}
			continue
		}
		if m := fence.FindStringSubmatch(text); m != nil && (!inBlock || strings.HasPrefix(strings.TrimSpace(text), fenceMark) && strings.TrimSpace(text) == fenceMark) {
			if !inBlock {
				inBlock, fenceMark = true, m[1]
				shell, console = shellInfos[m[2]], m[2] == "console"
			} else {
				inBlock = false
			}
			continue
		}
		if !inBlock {
			for _, m := range inlineCode.FindAllStringSubmatch(text, -1) {
				if s := m[1]; strings.HasPrefix(s, "make ") || strings.HasPrefix(s, "go test ") || strings.HasPrefix(s, "kubectl ") || strings.HasPrefix(s, "helm ") {
					add(line, s)
				}
			}
			continue
		}
		if !shell {
			continue
		}
		cmd := strings.TrimSpace(text)
		if console {
			if !strings.HasPrefix(cmd, "$ ") && pending == "" {
				continue // output
			}
			cmd = strings.TrimPrefix(cmd, "$ ")
		}
		if pending == "" {
			pendingLine = line
		}
		if m := hereDoc.FindStringSubmatch(cmd); m != nil {
			heredoc = m[1]
			cmd = strings.TrimSpace(cmd[:strings.Index(cmd, "<<")])
		}
		if strings.HasSuffix(cmd, `\`) {
			pending += strings.TrimSuffix(cmd, `\`) + " "
			continue
		}
		add(pendingLine, pending+cmd)
		pending = ""
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// splitCommands splits a line of shell into the words of each simple command: on
// &&, ||, ;, | outside quotes, without the comment that ends the line.
func splitCommands(line string) [][]string {
	var cmds [][]string
	var words []string
	var w strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	end := func() {
		flush()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	var quote rune
	depth := 0 // inside $( ... )
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case depth > 0:
			w.WriteRune(r)
			switch r {
			case '(':
				depth++
			case ')':
				depth--
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '$' && i+1 < len(rs) && rs[i+1] == '(':
			w.WriteString("$(")
			i++
			depth, inWord = 1, true
		case r == '\\' && i+1 < len(rs):
			i++
			w.WriteRune(rs[i])
			inWord = true
		case r == '#' && !inWord:
			end()
			return cmds
		case r == ' ' || r == '\t':
			flush()
		case r == ';' || r == '|' || r == '&':
			end()
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	end()
	return cmds
}

// knowledge is what a command is checked against.
type knowledge struct {
	makeTargets  map[string]bool
	managerFlags map[string]bool
	createKey    map[string]bool
	valuePaths   map[string]bool
	resources    map[string]bool
}

func loadKnowledge(t *testing.T) *knowledge {
	t.Helper()
	k := &knowledge{makeTargets: map[string]bool{}, managerFlags: map[string]bool{}, createKey: map[string]bool{},
		valuePaths: map[string]bool{}, resources: map[string]bool{}}

	mk, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^([A-Za-z0-9_.-]+):`).FindAllStringSubmatch(string(mk), -1) {
		k.makeTargets[m[1]] = true
	}

	flags, err := os.ReadFile(filepath.Join(repoRoot, "docs", "flags.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)` \\|").FindAllStringSubmatch(string(flags), -1) {
		k.managerFlags[m[1]] = true
	}
	ck, err := os.ReadFile("createkey.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`fs\.[A-Za-z]+\("([a-z-]+)"`).FindAllStringSubmatch(string(ck), -1) {
		k.createKey[m[1]] = true
	}
	k.createKey["kubeconfig"] = true

	for _, v := range chartValues(t) {
		k.valuePaths[v.path] = true
	}

	for _, crd := range crds(t) {
		n := crd.Spec.Names
		for _, s := range append([]string{n.Plural, n.Singular, strings.ToLower(n.Kind), n.Plural + "." + crd.Spec.Group}, append(n.ShortNames, n.Categories...)...) {
			k.resources[s] = true
		}
	}
	// The instance APIs the samples' Classes generate.
	raw, err := os.ReadFile(filepath.Join(repoRoot, "config", "samples", "classes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	k.resources[instanceapi.CategoryAll] = true
	for _, doc := range strings.Split(string(raw), "\n---") {
		var c struct {
			Kind string
			Spec struct {
				Prefix, Kind string
				Abstract     bool
				InstanceAPI  struct {
					Plural     string
					ShortNames []string
				} `json:"instanceAPI"`
			}
		}
		if err := yaml.Unmarshal([]byte(doc), &c); err != nil || c.Kind != "Class" {
			continue
		}
		k.resources[strings.ToLower(c.Spec.Prefix)] = true
		k.resources[strings.ToLower(c.Spec.Kind)] = true // a kind, or the category of its subclasses
		if !c.Spec.Abstract {
			plural := c.Spec.InstanceAPI.Plural
			if plural == "" {
				plural = catalog.Plural(c.Spec.Kind)
			}
			k.resources[plural] = true
			k.resources[plural+"."+c.Spec.Prefix+".sandbar.dev"] = true
			for _, s := range c.Spec.InstanceAPI.ShortNames {
				k.resources[s] = true
			}
		}
	}
	// Kubernetes' own resources the docs name.
	for _, s := range strings.Fields(`all pods pod po secrets secret crd crds customresourcedefinitions
		customresourcedefinition leases lease events event ev namespaces namespace ns serviceaccounts
		serviceaccount sa deployments deployment deploy services service svc ingresses ingress ing
		clusterrolebindings clusterrolebinding rolebindings rolebinding clusterroles clusterrole roles role
		configmaps configmap cm nodes node endpointslices resourcequotas resourcequota quota
		validatingadmissionpolicies validatingadmissionpolicybindings networkpolicies netpol
		poddisruptionbudgets pdb`) {
		k.resources[s] = true
	}
	return k
}

var envAssignment = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)

// repoPath tells a word that names a file or folder of the repository.
var repoPath = regexp.MustCompile(`^(\./)?(api|charts|cmd|config|controllers|docs|hack|internal)(/|$)`)

// check returns what is wrong with one command.
func (k *knowledge) check(argv []string) []string {
	// Variables set for the command: FOO=bar cmd ...
	for len(argv) > 0 && envAssignment.MatchString(argv[0]) {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return nil
	}
	var problems []string
	for _, a := range argv {
		if p := k.checkPath(a); p != "" {
			problems = append(problems, p)
		}
	}
	switch base := argv[0]; {
	case base == "make":
		problems = append(problems, k.checkMake(argv[1:])...)
		for _, a := range argv[1:] {
			// make bench runs the benchmarks of ./internal/... that BENCH matches.
			if p, ok := strings.CutPrefix(a, "BENCH="); ok && !strings.ContainsAny(p, "<>") {
				problems = append(problems, checkGoTest([]string{"-bench", p, "./internal/..."})...)
			}
		}
	case base == "go" && len(argv) > 1 && argv[1] == "test":
		problems = append(problems, checkGoTest(argv[2:])...)
	case base == "go" && len(argv) > 2 && argv[1] == "run" && strings.TrimSuffix(argv[2], "/") == "./cmd":
		problems = append(problems, k.checkManager(argv[3:])...)
	case base == "bin/manager" || base == "./bin/manager" || base == "manager":
		problems = append(problems, k.checkManager(argv[1:])...)
	case base == "helm":
		problems = append(problems, k.checkHelm(argv[1:])...)
	case base == "kubectl":
		problems = append(problems, k.checkKubectl(argv[1:])...)
	}
	return problems
}

func (k *knowledge) checkPath(word string) string {
	if strings.ContainsAny(word, "<>*$") || !repoPath.MatchString(word) {
		return ""
	}
	p := strings.TrimSuffix(strings.TrimSuffix(word, "..."), "/")
	if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(p))); err != nil {
		return fmt.Sprintf("%s does not exist", word)
	}
	return ""
}

func (k *knowledge) checkMake(args []string) []string {
	var problems []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
			continue
		}
		if !k.makeTargets[a] {
			problems = append(problems, fmt.Sprintf("make has no target %q", a))
		}
	}
	return problems
}

// checkGoTest checks the packages of go test and that its -run, -bench and -fuzz
// patterns match a function there.
func checkGoTest(args []string) []string {
	patterns := map[string]string{} // prefix of the functions -> pattern
	var pkgs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") {
			takes := map[string]bool{"run": true, "bench": true, "fuzz": true, "count": true, "timeout": true, "benchtime": true,
				"fuzztime": true, "parallel": true, "p": true, "o": true, "cpuprofile": true, "memprofile": true, "tags": true, "skip": true}
			if takes[name] && !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			switch name {
			case "run":
				patterns["Test"] = value
			case "bench":
				patterns["Benchmark"] = value
			case "fuzz":
				patterns["Fuzz"] = value
			}
			continue
		}
		if strings.HasPrefix(a, "./") || a == "." {
			pkgs = append(pkgs, a)
		}
	}
	var problems []string
	for prefix, p := range patterns {
		if p == "^$" || p == "" || len(pkgs) == 0 {
			continue
		}
		first := strings.Split(p, "/")[0]
		re, err := regexp.Compile(first)
		if err != nil {
			problems = append(problems, fmt.Sprintf("pattern %q: %v", p, err))
			continue
		}
		found := false
		for _, pkg := range pkgs {
			for _, fn := range testFuncs(pkg, prefix) {
				if re.MatchString(fn) {
					found = true
				}
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("no %s function of %s matches %q", prefix, strings.Join(pkgs, " "), p))
		}
	}
	return problems
}

var testFunc = regexp.MustCompile(`(?m)^func ((Test|Benchmark|Fuzz)[A-Za-z0-9_]*)\(`)

// testFuncs are the functions of a package (or of every package under ./x/...)
// whose names start with prefix; read once per package and prefix.
func testFuncs(pkg, prefix string) []string {
	all, ok := testFuncsRead[pkg]
	if !ok {
		all = readTestFuncs(pkg)
		testFuncsRead[pkg] = all
	}
	var out []string
	for _, fn := range all {
		if strings.HasPrefix(fn, prefix) {
			out = append(out, fn)
		}
	}
	return out
}

// testFuncsRead holds the Test, Benchmark and Fuzz functions of each package
// testFuncs read; the tests that use it run one at a time.
var testFuncsRead = map[string][]string{}

func readTestFuncs(pkg string) []string {
	dir := filepath.Join(repoRoot, filepath.FromSlash(strings.TrimSuffix(strings.TrimSuffix(pkg, "..."), "/")))
	recursive := strings.HasSuffix(pkg, "...")
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != dir && (!recursive || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
			out = append(out, m[1])
		}
		return nil
	})
	return out
}

func (k *knowledge) checkManager(args []string) []string {
	flags := k.managerFlags
	if len(args) > 0 && args[0] == "create-key" {
		flags, args = k.createKey, args[1:]
	}
	var problems []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") || strings.ContainsAny(a, "<>") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "" && name != "h" && name != "help" && !flags[name] {
			problems = append(problems, fmt.Sprintf("the manager has no flag --%s", name))
		}
	}
	return problems
}

var valueIndex = regexp.MustCompile(`\[[0-9]+\]`)

func (k *knowledge) checkHelm(args []string) []string {
	var problems []string
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		if name != "--set" && name != "--set-string" && name != "--set-json" && name != "--set-file" {
			continue
		}
		if !hasValue && i+1 < len(args) {
			i++
			value = args[i]
		}
		for _, pair := range strings.Split(value, ",") {
			key, _, ok := strings.Cut(pair, "=")
			if !ok {
				continue
			}
			if !k.hasValue(key) {
				problems = append(problems, fmt.Sprintf("the chart has no value %s", key))
			}
		}
	}
	return problems
}

// hasValue tells a value path of the chart, with list indexes as [].
func (k *knowledge) hasValue(key string) bool {
	p := valueIndex.ReplaceAllString(key, "[]")
	if k.valuePaths[p] {
		return true
	}
	// An item of a list the chart leaves free-form, or a key under a free-form map
	// (annotations, resources, nodeSelector): the path up to it is enough.
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '.' || p[i] == '[' {
			parent := p[:i]
			if k.valuePaths[parent] {
				return !k.hasChildren(parent)
			}
		}
	}
	return false
}

func (k *knowledge) hasChildren(parent string) bool {
	for p := range k.valuePaths {
		if strings.HasPrefix(p, parent+".") || strings.HasPrefix(p, parent+"[].") {
			return true
		}
	}
	return false
}

func (k *knowledge) checkKubectl(args []string) []string {
	// Flags that take a value, so that the value is not read as a resource.
	valued := map[string]bool{"-n": true, "--namespace": true, "-o": true, "--output": true, "-l": true, "--selector": true,
		"-f": true, "--filename": true, "-k": true, "--kubeconfig": true, "--for": true, "--timeout": true, "--type": true,
		"-p": true, "--patch": true, "--as": true, "--field-selector": true, "--context": true}
	var words []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if valued[a] {
				i++
			}
			continue
		}
		words = append(words, a)
	}
	if len(words) < 2 {
		return nil
	}
	switch words[0] {
	case "get", "describe", "delete", "edit", "explain", "patch", "label", "annotate", "wait":
	case "auth": // kubectl auth can-i VERB RESOURCE
		if len(words) < 4 || words[1] != "can-i" {
			return nil
		}
		words = words[2:]
	default:
		return nil
	}
	var problems []string
	for _, res := range strings.Split(words[1], ",") {
		res, _, _ = strings.Cut(res, "/")
		if words[0] == "explain" {
			res, _, _ = strings.Cut(res, ".")
		}
		if res == "" || strings.ContainsAny(res, "<>") || res == strings.ToUpper(res) {
			continue // a placeholder
		}
		if !k.resources[strings.ToLower(res)] {
			problems = append(problems, fmt.Sprintf("kubectl knows no resource %q here (not a CRD of ours, a sample's instance API, or a Kubernetes resource the docs use)", res))
		}
	}
	return problems
}

// proseValue finds a chart value named in the docs' text: "(chart `x.y`)",
// "chart value `x`", "chart value x.y".
var proseValue = regexp.MustCompile("chart(?:\\s+value)?\\s+`([a-z][A-Za-z0-9]*(?:\\.[A-Za-z0-9]+|\\[[0-9]+\\])*)`|chart\\s+value\\s+([a-z][A-Za-z0-9]*(?:\\.[A-Za-z0-9]+)+)")

// proseFlag finds a flag in backquotes in the docs' text.
var proseFlag = regexp.MustCompile("`--([a-z][a-z0-9-]*[a-z0-9])[`= ]")

// Flags the docs name that are not the manager's: kubectl's and helm's, and those of
// the soak and chaos commands (read from their sources below).
var otherFlags = map[string]bool{"dry-run": true, "group": true, "user": true, "set": true, "namespace": true,
	"create-namespace": true, "server-side": true, "as": true}

// TestDocsNameRealValuesAndFlags checks the text around the commands: every chart
// value a doc names ("chart value x.y", "(chart `x.y`)") is in values.yaml, and
// every `--flag` in backquotes is a flag of the manager, create-key, hack/soak or
// hack/chaos, or one of the few kubectl and helm flags the docs use.
func TestDocsNameRealValuesAndFlags(t *testing.T) {
	k := loadKnowledge(t)
	flags := map[string]bool{}
	for f := range k.managerFlags {
		flags[f] = true
	}
	for f := range k.createKey {
		flags[f] = true
	}
	for f := range otherFlags {
		flags[f] = true
	}
	for _, dir := range []string{"soak", "chaos", "dev"} {
		files, _ := filepath.Glob(filepath.Join(repoRoot, "hack", dir, "*.go"))
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range regexp.MustCompile(`flag\.[A-Za-z0-9]+\((?:&[A-Za-z0-9_.]+, )?"([a-z-]+)"`).FindAllStringSubmatch(string(src), -1) {
				flags[m[1]] = true
			}
		}
	}
	for _, f := range docFiles(t) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, f)
		text := string(raw)
		lineOf := func(i int) int { return strings.Count(text[:i], "\n") + 1 }
		for _, m := range proseValue.FindAllStringSubmatchIndex(text, -1) {
			v := ""
			if m[2] >= 0 {
				v = text[m[2]:m[3]]
			} else {
				v = text[m[4]:m[5]]
			}
			if !k.hasValue(v) {
				t.Errorf("%s:%d: the chart has no value %s", filepath.ToSlash(rel), lineOf(m[0]), v)
			}
		}
		for _, m := range proseFlag.FindAllStringSubmatchIndex(text, -1) {
			if f := text[m[2]:m[3]]; !flags[f] {
				t.Errorf("%s:%d: no command of ours has the flag --%s (docs/flags.md lists the manager's)", filepath.ToSlash(rel), lineOf(m[0]), f)
			}
		}
	}
}

// The checker itself: each of these commands has a mistake, which it must find,
// and the same commands without the mistake pass.
func TestDocsCommandCheckFindsMistakes(t *testing.T) {
	k := loadKnowledge(t)
	for _, row := range []struct{ good, bad string }{
		{"make test-unit", "make test-units"},
		{"make bench BENCH=Idle", "make benches BENCH=Idle"},
		{"make bench BENCH='TasksGet$'", "make bench BENCH='TaskGet$'"},
		{"go test ./cmd -run TestFlagsReference -update", "go test ./cmd -run TestFlagReference -update"},
		{"go test -run '^$' -fuzz FuzzCoerce ./internal/catalog", "go test -run '^$' -fuzz FuzzCoerce ./internal/catalogs"},
		{"go test -run '^$' -bench 'Build1000' ./internal/catalog/", "go test -run '^$' -bench 'Build2000' ./internal/catalog/"},
		{"bin/manager --mcp-bind-address=127.0.0.1:8080", "bin/manager --mcp-bind-addr=127.0.0.1:8080"},
		{"bin/manager create-key --name claude --dry-run", "bin/manager create-key --name claude --dryrun"},
		{"helm install s charts/sandbar --set mcp.callTimeout=5s", "helm install s charts/sandbar --set mcp.callTimeOut=5s"},
		{"helm install s charts/sandbar --set 'ingress.hosts[0].host=x'", "helm install s charts/sandbar --set 'ingress.host[0].host=x'"},
		{"kubectl get spaceboots -A", "kubectl get spaceboot2s -A"},
		{"kubectl get wfp -o wide", "kubectl get wfps -o wide"},
		{"kubectl auth can-i create spaceboots.zorp.sandbar.dev -n a", "kubectl auth can-i create spaceboots.zorp.example.dev -n a"},
		{"kubectl apply -f config/samples/classes.yaml", "kubectl apply -f config/samples/class.yaml"},
	} {
		for _, argv := range splitCommands(row.good) {
			if p := k.check(argv); len(p) > 0 {
				t.Errorf("%s: %v, want no problem", row.good, p)
			}
		}
		found := 0
		for _, argv := range splitCommands(row.bad) {
			found += len(k.check(argv))
		}
		if found == 0 {
			t.Errorf("%s: no problem found", row.bad)
		}
	}
}

// TestDocsNameRealTests checks that every test, benchmark and fuzz target the docs
// name in backquotes (`TestX`, `BenchmarkX`, `FuzzX`) is a function of a test file.
func TestDocsNameRealTests(t *testing.T) {
	known := map[string]bool{}
	for _, fn := range testFuncs("./...", "Test") {
		known[fn] = true
	}
	for _, fn := range testFuncs("./...", "Benchmark") {
		known[fn] = true
	}
	for _, fn := range testFuncs("./...", "Fuzz") {
		known[fn] = true
	}
	named := regexp.MustCompile("`((?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*)`")
	for _, f := range append(docFiles(t), filepath.Join(repoRoot, "ARCHITECTURE.md")) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, f)
		text := string(raw)
		for _, m := range named.FindAllStringSubmatchIndex(text, -1) {
			if name := text[m[2]:m[3]]; !known[name] {
				t.Errorf("%s:%d: no test function is named %s", filepath.ToSlash(rel), strings.Count(text[:m[0]], "\n")+1, name)
			}
		}
	}
}

// TestDocsLinksResolve checks every relative link of the docs: the file exists, and
// the anchor, if any, is a heading of it.
func TestDocsLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	files := append(docFiles(t), filepath.Join(repoRoot, "ARCHITECTURE.md"), filepath.Join(repoRoot, "SECURITY.md"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, f)
		// Code is not links: blank it out, keeping the lines where they are.
		text := codeBlock.ReplaceAllStringFunc(string(raw), blank)
		text = inlineCode.ReplaceAllStringFunc(text, blank)
		for _, m := range link.FindAllStringSubmatchIndex(text, -1) {
			target := text[m[2]:m[3]]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			where := fmt.Sprintf("%s:%d", filepath.ToSlash(rel), strings.Count(text[:m[0]], "\n")+1)
			file, anchor, _ := strings.Cut(target, "#")
			path := f
			if file != "" {
				path = filepath.Join(filepath.Dir(f), filepath.FromSlash(file))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: %s does not exist", where, target)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			if !headingAnchors(t, path)[anchor] {
				t.Errorf("%s: %s has no heading #%s", where, filepath.ToSlash(file), anchor)
			}
		}
	}
}

// headingAnchors are the ids GitHub gives the headings of a Markdown file.
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	inBlock := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		id := strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
				return r
			case r >= 'A' && r <= 'Z':
				return r + 'a' - 'A'
			case r == ' ':
				return '-'
			}
			return -1
		}, title)
		base := id
		for i := 1; out[id]; i++ {
			id = fmt.Sprintf("%s-%d", base, i)
		}
		out[id] = true
	}
	return out
}

var codeBlock = regexp.MustCompile("(?ms)^\\s*```.*?^\\s*```")

// blank is s with every character but line breaks made a space.
func blank(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' {
			return r
		}
		return ' '
	}, s)
}
