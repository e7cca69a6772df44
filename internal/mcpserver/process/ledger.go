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

package process

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// An account's starts are admitted against a ledger that every replica shares: a
// Lease of the account's namespace, named after the account, whose annotation lists
// the processes being started, or started within pendingFor, and the bytes each
// reserved. A replica writes a process's reservation into the ledger before it
// creates the process, with the resourceVersion it read as the precondition, and
// counts every reservation whose process its cache does not show (yet): of two
// replicas admitting at once, the second to write fails, reads the ledger again with
// the first's reservation in it, and decides again. Once the process is created its
// reservation says so, and a reservation of a process created and since deleted no
// longer counts. Only the manager writes ledgers (the tenant roles grant no Leases);
// one the account's identity could write would let it drop only reservations the
// replicas' caches do not show yet.

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update

const (
	// ledgerPrefix begins the name of every ledger.
	ledgerPrefix = "sandbar-processes-"
	// pendingKey is the ledger's annotation that holds the reservations.
	pendingKey = "meta.sandbar.dev/pending"
	// maxPending is how many reservations one ledger holds: an account that has
	// started as many processes within pendingFor waits for the oldest to expire.
	maxPending = 1000
	// ledgerAttempts is how many times a ledger change is tried against other
	// replicas' changes.
	ledgerAttempts = 20
)

// entry is one reservation: the bytes reserved, when (Unix milliseconds), and
// whether the process was created.
type entry struct {
	Bytes   int64 `json:"b"`
	At      int64 `json:"t"`
	Created bool  `json:"c,omitempty"`
}

func (e entry) expired(now time.Time) bool {
	return now.Sub(time.UnixMilli(e.At)) > pendingFor
}

// ledger is an account's ledger as read: its Lease (nil while there is none) and
// its reservations by process name.
type ledger struct {
	lease   *coordinationv1.Lease
	pending map[string]entry
}

// ledgerName is the name of an account's ledger: the account's name after the
// prefix, or a digest of it when that would not make a valid name.
func ledgerName(acct *catalog.Account) string {
	name := ledgerPrefix + acct.Name
	if len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(acct.Name))
	return ledgerPrefix + hex.EncodeToString(sum[:16])
}

// readLedger reads an account's ledger from the API server. Reservations it cannot
// read count as none: only the manager writes them.
func (s *Service) readLedger(ctx context.Context, acct *catalog.Account) (*ledger, error) {
	l := &ledger{pending: map[string]entry{}}
	var lease coordinationv1.Lease
	err := s.apiReader.Get(ctx, client.ObjectKey{Namespace: acct.Namespace, Name: ledgerName(acct)}, &lease)
	switch {
	case apierrors.IsNotFound(err):
		return l, nil
	case err != nil:
		return nil, err
	}
	l.lease = &lease
	if raw := lease.Annotations[pendingKey]; raw != "" {
		if json.Unmarshal([]byte(raw), &l.pending) != nil || l.pending == nil {
			l.pending = map[string]entry{}
		}
	}
	return l, nil
}

// writeLedger writes the ledger back, without the reservations that have expired:
// it fails with a conflict when another replica changed it since it was read.
func (s *Service) writeLedger(ctx context.Context, acct *catalog.Account, l *ledger) error {
	now := time.Now()
	for name, e := range l.pending {
		if e.expired(now) {
			delete(l.pending, name)
		}
	}
	raw, err := json.Marshal(l.pending)
	if err != nil {
		return err
	}
	if l.lease != nil {
		if l.lease.Annotations == nil {
			l.lease.Annotations = map[string]string{}
		}
		l.lease.Annotations[pendingKey] = string(raw)
		return s.client.Update(ctx, l.lease)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Namespace: acct.Namespace, Name: ledgerName(acct),
		Labels:      map[string]string{metav1alpha1.LabelManagedBy: metav1alpha1.ManagedByValue},
		Annotations: map[string]string{pendingKey: string(raw)},
	}}
	// Owned by the account's ServiceAccount, if it has one: deleted with it.
	var sa metav1alpha1.ServiceAccount
	if acct.User == "" && s.client.Get(ctx, client.ObjectKey{Namespace: acct.Namespace, Name: acct.Name}, &sa) == nil {
		lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: metav1alpha1.GroupVersion.String(),
			Kind: "ServiceAccount", Name: sa.Name, UID: sa.UID}}
	}
	return s.client.Create(ctx, lease)
}

// errUnchanged is what a ledger change answers when there is nothing to write.
var errUnchanged = errors.New("unchanged")

// onLedger reads the account's ledger, applies change and writes it, again from a
// fresh read whenever another replica wrote it meanwhile. A change that answers
// errUnchanged writes nothing; any other error it answers is onLedger's.
func (s *Service) onLedger(ctx context.Context, acct *catalog.Account, change func(*ledger) error) error {
	for attempt := 1; ; attempt++ {
		l, err := s.readLedger(ctx, acct)
		if err != nil {
			return err
		}
		if err := change(l); err != nil {
			if errors.Is(err, errUnchanged) {
				return nil
			}
			return err
		}
		err = s.writeLedger(ctx, acct, l)
		if (!apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err)) || attempt == ledgerAttempts {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * 5 * time.Millisecond):
		}
	}
}

// settle marks the reservation of a process admitted as created, or drops it when
// the process was not created. Should the request end first, the reservation
// counts until it expires.
func (s *Service) settle(ctx context.Context, acct *catalog.Account, name string, created bool) {
	if !s.quota.limits.on() {
		return
	}
	_ = s.onLedger(ctx, acct, func(l *ledger) error {
		e, ok := l.pending[name]
		switch {
		case !ok:
			return errUnchanged
		case created:
			e.Created = true
			l.pending[name] = e
		default:
			delete(l.pending, name)
		}
		return nil
	})
}

// exists reports whether a process is in the API server (and not only in a cache).
func (s *Service) exists(ctx context.Context, namespace, name string) (bool, error) {
	var m metav1.PartialObjectMetadata
	m.SetGroupVersionKind(metav1alpha1.GroupVersion.WithKind("WorkflowProcess"))
	err := s.apiReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &m)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
