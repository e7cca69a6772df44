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

package authserver

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/zitadel/oidc/v3/pkg/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=authorizationservers,verbs=get;create
// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=authorizationservers/status,verbs=get;update;patch

// StatusName is the name of the AuthorizationServer the leader writes, in the
// server's namespace.
const StatusName = "sandbar"

// StatusEvery is how often the leader writes it.
const StatusEvery = 30 * time.Second

// ReportStatus writes what this replica sees of the server into its
// AuthorizationServer (made if it is not there): whether the identity provider's
// discovery answers, how the last client document fetch went, whether a key
// signs, how many clients registered and how many grants exist.
func (s *Server) ReportStatus(ctx context.Context) error {
	key := ctrlclient.ObjectKey{Namespace: s.cfg.Namespace, Name: StatusName}
	var obj metav1alpha1.AuthorizationServer
	if err := s.r.Get(ctx, key, &obj); apierrors.IsNotFound(err) {
		obj = metav1alpha1.AuthorizationServer{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "sandbar"}}}
		if err := s.c.Create(ctx, &obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("making the AuthorizationServer %s: %w", key, err)
		}
		if err := s.r.Get(ctx, key, &obj); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	s.observe(ctx, &obj.Status, obj.Generation)
	return s.c.Status().Update(ctx, &obj)
}

func (s *Server) observe(ctx context.Context, st *metav1alpha1.AuthorizationServerStatus, generation int64) {
	st.Issuer, st.Upstream = s.cfg.Issuer, s.cfg.Upstream.Name()
	set := func(typ string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: generation})
	}

	upstreamErr := s.probeUpstream(ctx)
	if upstreamErr != nil {
		set(metav1alpha1.ConditionUpstreamReady, metav1.ConditionFalse, "Unreachable",
			fmt.Sprintf("%s does not answer: %v", s.cfg.Upstream.Name(), upstreamErr))
	} else {
		set(metav1alpha1.ConditionUpstreamReady, metav1.ConditionTrue, "Reachable", s.cfg.Upstream.Name()+" answers")
	}

	switch last := s.docs.Last(); {
	case last == nil:
		set(metav1alpha1.ConditionClientDocumentsReady, metav1.ConditionUnknown, "NoneFetched", "no client ID metadata document was fetched yet")
	case last.Err != nil:
		set(metav1alpha1.ConditionClientDocumentsReady, metav1.ConditionFalse, "FetchFailed",
			fmt.Sprintf("at %s: %s", last.At.UTC().Format(time.RFC3339), last.Err.Detailed()))
	default:
		set(metav1alpha1.ConditionClientDocumentsReady, metav1.ConditionTrue, "Fetched",
			fmt.Sprintf("at %s: %s was read and checked", last.At.UTC().Format(time.RFC3339), last.ClientID))
	}

	keysOK := false
	if _, ok := s.keys.Signer(); ok {
		keysOK = true
		set(metav1alpha1.ConditionSigningKeysReady, metav1.ConditionTrue, "Signing", fmt.Sprintf("%d keys in Secret %s", len(s.keys.Ring().Keys), s.cfg.KeysSecret))
	} else {
		set(metav1alpha1.ConditionSigningKeysReady, metav1.ConditionFalse, "NoKey", "no key signs now; see the manager's log (Secret "+s.cfg.KeysSecret+")")
	}

	s.observeTrusted(ctx, st, generation)

	st.Registration = "off"
	if s.regs != nil {
		st.Registration = "?/" + fmt.Sprint(s.regs.max)
		if n, err := s.count(ctx, ClientComponent); err == nil {
			st.Registration = fmt.Sprintf("%d/%d", n, s.regs.max)
		}
	}
	if n, err := s.count(ctx, GrantComponent); err == nil {
		st.Grants = int32(n)
	}

	switch {
	case upstreamErr != nil:
		set(metav1alpha1.ConditionReady, metav1.ConditionFalse, "UpstreamUnreachable", "people cannot log in: the identity provider "+s.cfg.Upstream.Name()+" does not answer")
	case !keysOK:
		set(metav1alpha1.ConditionReady, metav1.ConditionFalse, "NoSigningKey", "no key signs tokens")
	default:
		set(metav1alpha1.ConditionReady, metav1.ConditionTrue, "Serving", "clients can sign people in at "+s.cfg.Issuer)
	}
}

func (s *Server) count(ctx context.Context, component string) (int, error) {
	var list corev1.SecretList
	if err := s.r.List(ctx, &list, ctrlclient.InNamespace(s.cfg.Namespace), ctrlclient.MatchingLabels{LabelComponent: component}); err != nil {
		return 0, err
	}
	return len(list.Items), nil
}

// StatusReporter writes the status every StatusEvery while its replica leads.
func (s *Server) StatusReporter() *StatusReporter { return &StatusReporter{s: s} }

// StatusReporter is a manager runnable of the leader.
type StatusReporter struct{ s *Server }

// NeedLeaderElection is true: one replica writes the status.
func (r *StatusReporter) NeedLeaderElection() bool { return true }

// Start writes the status until ctx ends.
func (r *StatusReporter) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("oauth2")
	tick := time.NewTicker(StatusEvery)
	defer tick.Stop()
	for {
		if err := r.s.ReportStatus(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "writing the AuthorizationServer status")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// probeUpstream asks the provider whether it is there: an OpenID provider's
// discovery document is read; a provider of OAuth 2 only answers its
// authorization URL with anything but a server error.
func (s *Server) probeUpstream(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u := s.cfg.Upstream
	if !u.OAuth2Only() {
		_, err := client.Discover(ctx, u.IssuerURL, u.HTTPClient)
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.AuthorizationURL, nil)
	if err != nil {
		return err
	}
	resp, err := u.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("its authorization URL answered %d", resp.StatusCode)
	}
	return nil
}
