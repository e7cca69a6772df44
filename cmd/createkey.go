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
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/yaml"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/controllers"
	"github.com/sandbar-dev/sandbar/internal/apikey"
)

// createKey issues a new API key for a ServiceAccount. The key is printed once, as
// the bearer token "<namespace>/<service-name>:<key>"; only its bcrypt hash and its
// id are stored.
func createKey(args []string) int {
	fs := flag.NewFlagSet("create-key", flag.ContinueOnError)
	ns := fs.String("namespace", "default", "Namespace of the ServiceAccount.")
	name := fs.String("name", "", "Name of the ServiceAccount (serviceaccounts.meta.sandbar.dev).")
	dryRun := fs.Bool("dry-run", false, "Print the Secret (and a ServiceAccount) as YAML instead of writing them; the token goes to stderr.")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: manager create-key --name NAME [--namespace NS] [--dry-run] [--kubeconfig FILE]")
		fs.PrintDefaults()
	}
	// The kubeconfig flag is registered on the default flag set by controller-runtime.
	if f := flag.Lookup("kubeconfig"); f != nil {
		fs.Var(f.Value, f.Name, f.Usage)
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *name == "" {
		fs.Usage()
		return 2
	}
	if *dryRun {
		return printKeyYAML(*ns, *name)
	}
	cfg, err := config.GetConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "create-key:", err)
		return 1
	}
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "create-key:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	token, err := apikey.Issue(ctx, c, *ns, *name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "create-key:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "Stored the hash of a new key for %s/%s. The token is shown only now:\n", *ns, *name)
	fmt.Println(token)
	return 0
}

func printKeyYAML(ns, name string) int {
	sa := &metav1alpha1.ServiceAccount{}
	sa.APIVersion, sa.Kind = metav1alpha1.GroupVersion.String(), "ServiceAccount"
	sa.Namespace, sa.Name = ns, name
	sa.Spec.ServiceName = name
	sa.Spec.APIKeySecretRef = metav1alpha1.SecretKeyRef{Name: name + "-api-key", Key: apikey.DefaultKey}
	key, hash, err := apikey.Generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "create-key:", err)
		return 1
	}
	for _, obj := range []any{apikey.Secret(sa, hash, apikey.ID(key)), sa} {
		b, err := yaml.Marshal(obj)
		if err != nil {
			fmt.Fprintln(os.Stderr, "create-key:", err)
			return 1
		}
		fmt.Printf("---\n%s", b)
	}
	fmt.Fprintf(os.Stderr, "Token (shown only now): %s\n", apikey.FormatIn(sa.Namespace, sa.Spec.ServiceName, key))
	return 0
}
