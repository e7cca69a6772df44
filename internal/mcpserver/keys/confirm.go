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

package keys

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/apikey"
)

// ConfirmRefusalsWith makes the refusal of a token that names a service stand only
// when confirm, asked within the request's authentication deadline, says that the
// Kubernetes API server answers. The catalog's accounts and their key Secrets come
// from the manager's cache, which is behind while the API server does not answer:
// a key issued just before it stopped, or an account created then, is not in it, and
// would be called invalid. Such a token gets 503 with Retry-After instead (as every
// refused token does before the catalog's first build), whatever the reason of the
// refusal, so the answer tells nothing more about the token than a 401 would; the
// failed attempt counts all the same. Call it before serving.
func (a *Authenticator) ConfirmRefusalsWith(confirm func(context.Context) error) {
	a.confirm = confirm
}

// ReadRefusedKeysFrom makes the refusal of a key stand only when api, the API server
// read past the cache, has its account's key Secret as the cache does: the cache is
// behind a Secret just written (a key issued, a replica just started whose Secrets
// are not all listed yet), and a key it does not know yet gets 503 with Retry-After,
// not 401. Refusals are bounded by the client's failed attempts, and so are these
// reads (of the Secret's metadata only). Call it before serving.
func (a *Authenticator) ReadRefusedKeysFrom(api client.Reader) {
	a.api = api
}

// confirmSecret answers an error when the refused key's Secret is not, in the API
// server, as the cache had it.
func (a *Authenticator) confirmSecret(ctx context.Context, f *authFailure) error {
	if a.api != nil && f.unknown != nil {
		return a.confirmUnknown(ctx, f.unknown)
	}
	if a.api == nil || f.secret.Name == "" {
		return nil
	}
	var meta metav1.PartialObjectMetadata
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := a.api.Get(ctx, f.secret, &meta)
	switch {
	case apierrors.IsNotFound(err) && f.secretRV == "":
		return nil
	case err != nil:
		return fmt.Errorf("reading the key Secret: %w", err)
	case meta.ResourceVersion != f.secretRV:
		return errors.New("the cache is behind the key Secret")
	}
	return nil
}

// confirmUnknown answers an error when the API server has an account of the
// token's namespace and service that the catalog does not: the catalog is behind
// (a replica just started, an account just created).
func (a *Authenticator) confirmUnknown(ctx context.Context, t *apikey.Token) error {
	var list metav1alpha1.ServiceAccountList
	if err := a.api.List(ctx, &list, client.InNamespace(t.Namespace)); err != nil {
		return fmt.Errorf("listing the namespace's accounts: %w", err)
	}
	for i := range list.Items {
		if list.Items[i].Spec.ServiceName == t.Service {
			return errors.New("the catalog is behind the account")
		}
	}
	return nil
}

// current is nil when what a refusal was read from may be trusted: the catalog has
// its first build, and the API server answers (when there is a confirm).
func (a *Authenticator) current(ctx context.Context) error {
	if _, ok := a.store.Built(); !ok {
		return errors.New("the catalog has no build yet")
	}
	if a.confirm != nil {
		return a.confirm(ctx)
	}
	return nil
}
