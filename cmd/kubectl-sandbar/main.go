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

// Command kubectl-sandbar is the kubectl plugin of Sandbar: kubectl sandbar approve
// NAME and kubectl sandbar deny NAME add the caller's decision to an Approval, with
// the user and groups the API server knows them by (a SelfSubjectReview), as the
// admission policy of approvals requires. Install it on the PATH (make
// kubectl-sandbar puts it in bin/).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

const usage = `Usage: kubectl sandbar approve|deny NAME [-n NAMESPACE] [--reason TEXT] [--context CONTEXT] [--kubeconfig FILE] [--as USER [--as-group GROUP]...]

Adds your decision to the Approval NAME: a call a call policy holds until the people
it names approve it. It takes the verb approve on approvals (kubectl auth can-i approve
approvals -n NAMESPACE); the caller of the call cannot decide it.
  kubectl get approvals -A              what waits
  kubectl sandbar approve NAME -n NS    approve it
  kubectl sandbar deny NAME -n NS --reason "over budget"
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "approve" && args[0] != "deny") {
		fmt.Fprint(stderr, usage)
		return 2
	}
	decision := metav1alpha1.DecisionApprove
	if args[0] == "deny" {
		decision = metav1alpha1.DecisionDeny
	}
	fs := flag.NewFlagSet("kubectl sandbar "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	var namespace, reason, kubeContext, kubeconfig, as string
	var asGroups []string
	fs.StringVar(&namespace, "n", "", "Namespace of the Approval (default: the context's).")
	fs.StringVar(&namespace, "namespace", "", "Namespace of the Approval (default: the context's).")
	fs.StringVar(&reason, "reason", "", "Why, for the caller and the audit.")
	fs.StringVar(&kubeContext, "context", "", "The kubeconfig context to use.")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "The kubeconfig file to use.")
	fs.StringVar(&as, "as", "", "Decide as this user (impersonation, as kubectl --as): your own rights must allow impersonating them.")
	fs.Func("as-group", "Decide as a member of this group too (repeat it; as kubectl --as-group).", func(g string) error {
		asGroups = append(asGroups, g)
		return nil
	})
	// Flags may come before or after the name, as kubectl takes them.
	var names []string
	rest := args[1:]
	for {
		if err := fs.Parse(rest); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		names, rest = append(names, fs.Arg(0)), fs.Args()[1:]
	}
	if len(names) != 1 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: kubeContext}
	overrides.AuthInfo.Impersonate, overrides.AuthInfo.ImpersonateGroups = as, asGroups
	cfg := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	if namespace == "" {
		ns, _, err := cfg.Namespace()
		if err != nil {
			fmt.Fprintln(stderr, "error:", err)
			return 1
		}
		namespace = ns
	}
	rest2, err := cfg.ClientConfig()
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	scheme := runtime.NewScheme()
	_ = metav1alpha1.AddToScheme(scheme)
	_ = authenticationv1.AddToScheme(scheme)
	c, err := client.New(rest2, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ap, err := decide(ctx, c, client.ObjectKey{Namespace: namespace, Name: names[0]}, decision, reason)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	fmt.Fprintf(stdout, "approval %s/%s: %s recorded (%s). It holds %s of %s; %s.\n", ap.Namespace, ap.Name, strings.ToLower(decision),
		ap.Spec.Decisions[len(ap.Spec.Decisions)-1].User, ap.Spec.Call.Tool, ap.Spec.Call.Account, orWaits(ap.Status.Message))
	return 0
}

// decide adds the caller's decision to an Approval: who they are, as the API server
// says, so that the admission policy of approvals admits it.
func decide(ctx context.Context, c client.Client, key client.ObjectKey, decision, reason string) (*metav1alpha1.Approval, error) {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return nil, fmt.Errorf("asking the API server who you are (SelfSubjectReview): %w", err)
	}
	me := review.Status.UserInfo
	var ap metav1alpha1.Approval
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, key, &ap); err != nil {
			return err
		}
		now := metav1.Now()
		ap.Spec.Decisions = append(ap.Spec.Decisions, metav1alpha1.ApprovalDecision{Decision: decision, User: me.Username,
			Groups: me.Groups, Reason: reason, Time: &now})
		return c.Update(ctx, &ap)
	})
	if err != nil {
		return nil, err
	}
	return &ap, nil
}

func orWaits(msg string) string {
	if msg == "" {
		return "the manager reads it in a moment (kubectl get approval)"
	}
	return "before this decision: " + msg
}
