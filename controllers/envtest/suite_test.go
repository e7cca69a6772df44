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

package envtest_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/controllers"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// This is the envtest suite of the controllers, apart from their package so that the
// pure tests there need no control plane. It runs one control plane and one manager
// with the real reconcilers; each test uses objects of its own (see uniq) so that tests do not see each other's.
var (
	k8s client.Client
	// kube reads the API server's own endpoints (the OpenAPI documents kubectl explain reads).
	kube  kubernetes.Interface
	store *catalog.Store
	// listHook, when set, is asked before every List the manager's client makes: an
	// error it returns is that List's answer. A test sets it to make the reconcilers
	// meet a failing API server, for lists of its own kinds only.
	listHook atomic.Pointer[func(client.ObjectList) error]
	// metricsURL is the manager's metrics endpoint, served as in production (HTTPS,
	// for authorized tokens only).
	metricsURL string
	// restConfig reaches the suite's API server as its administrator.
	restConfig *rest.Config
)

const (
	timeout = 20 * time.Second
	poll    = 50 * time.Millisecond
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// Keys of the lowest bcrypt cost: the suite issues many (apikey.Cost).
	apikey.Cost = bcrypt.MinCost
	testenv.SetLogger()
	env, err := testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	restConfig = env.Config

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	metricsAddr, err := freeLoopbackAddress()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	metricsURL = "https://" + metricsAddr + "/metrics"
	mgr, st, err := controllers.NewManager(ctx, env.Config, ctrl.Options{
		Metrics:   controllers.MetricsServer(metricsAddr, true, ""),
		NewClient: hookedClient,
	}, controllers.Options{FinishedProcessTTL: time.Hour, TokenKey: tokenKey})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	store = st
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	k8s, err = client.New(env.Config, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if kube, err = kubernetes.NewForConfig(env.Config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := createJobAccount(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	return code
}

// createJobAccount makes the account that the built-in processes of the tests name as
// their owner: default/claude, acting as the Kubernetes ServiceAccount default/claude,
// which may work with the instances of every group in namespace default (the tests
// make a group per class prefix).
func createJobAccount(ctx context.Context) error {
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "claude", Namespace: "default"}
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "claude"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "sandbar-test-instances"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "claude-test-instances"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sandbar-test-instances"},
			Subjects: []rbacv1.Subject{subject}},
		&metav1alpha1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "claude"},
			Spec: metav1alpha1.ServiceAccountSpec{ServiceName: "claude", ServiceAccountName: "claude",
				APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: "claude-api-key"}}},
	} {
		if err := k8s.Create(ctx, o); err != nil {
			return fmt.Errorf("creating the job account: %w", err)
		}
	}
	return nil
}

// freeLoopbackAddress is a loopback address with a port no one listens on now.
func freeLoopbackAddress() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// hookedClient is the manager's usual client, with its Lists passing listHook first.
func hookedClient(cfg *rest.Config, opts client.Options) (client.Client, error) {
	c, err := client.NewWithWatch(cfg, opts)
	if err != nil {
		return nil, err
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if hook := listHook.Load(); hook != nil {
				if err := (*hook)(list); err != nil {
					return err
				}
			}
			return c.List(ctx, list, opts...)
		},
	}), nil
}

var counter atomic.Int64

// uniq gives each test names of its own: a prefix of lower-case letters.
func uniq(base string) string {
	n := counter.Add(1)
	var b strings.Builder
	for n > 0 {
		b.WriteByte(byte('a' + n%26))
		n /= 26
	}
	return base + b.String()
}

func condition(conds []metav1.Condition, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return *c
	}
	return metav1.Condition{Type: typ, Status: "Unknown"}
}

// classCondition waits until the Class's condition has the status and reason.
func waitClassCondition(t *testing.T, name, typ string, status metav1.ConditionStatus, reason string) metav1alpha1.Class {
	t.Helper()
	var class metav1alpha1.Class
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, &class)).To(Succeed())
		c := condition(class.Status.Conditions, typ)
		g.Expect(c.Status).To(Equal(status), "%s %s: %s", typ, c.Reason, c.Message)
		g.Expect(c.Reason).To(Equal(reason), "%s: %s", typ, c.Message)
		g.Expect(c.ObservedGeneration).To(Equal(class.Generation))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return class
}

// waitEvent waits for an Event about the object with the reason.
func waitEvent(t *testing.T, namespace, name, reason string) corev1.Event {
	t.Helper()
	if namespace == "" {
		namespace = "default"
	}
	var found corev1.Event
	NewWithT(t).Eventually(func(g Gomega) {
		var list corev1.EventList
		g.Expect(k8s.List(context.Background(), &list, client.InNamespace(namespace))).To(Succeed())
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason {
				found = e
				return
			}
		}
		g.Expect(false).To(BeTrue(), "no Event %s for %s", reason, name)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return found
}

// waitCRDDeleted waits until the CRD is gone or its deletion has begun. The API
// server removes a CRD once it has deleted its instances, in its own time: one deleted
// moments after it was established can stay Terminating for minutes, its finalizer
// backing off while the new resource's watch cache initializes ("could not list
// instances: storage is (re)initializing").
func waitCRDDeleted(t *testing.T, name string) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		var crd apiextensionsv1.CustomResourceDefinition
		switch err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, &crd); {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case crd.DeletionTimestamp.IsZero():
			return fmt.Errorf("the CRD %s is not being deleted", name)
		}
		return nil
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}
