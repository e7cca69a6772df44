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

package redact

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// generated is n characters drawn from alphabet, the same for the same seed: a key
// as a provider would issue it, without a real one in the source.
func generated(seed uint64, alphabet string, n int) string {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

const (
	base62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	hexits = "0123456789abcdef"
)

// The key formats of common providers are redacted wherever they sit in text; words
// and identifiers that share their prefixes are not.
func TestStringRedactsCommonKeyFormats(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		redacted bool
	}{
		{"GitHub fine-grained token", "github_pat_" + generated(1, base62, 22) + "_" + generated(2, base62, 59), true},
		{"Stripe live secret key", "sk_live_" + generated(3, base62, 24), true},
		{"Stripe test secret key", "sk_test_" + generated(4, base62, 24), true},
		{"Stripe live restricted key", "rk_live_" + generated(5, base62, 24), true},
		{"Stripe test restricted key", "rk_test_" + generated(6, base62, 99), true},
		{"Google API key", "AIza" + generated(7, base62+"_-", 35), true},
		{"GitLab personal token", "glpat-" + generated(8, base62, 20), true},
		{"GitLab deploy token", "gldt-" + generated(9, base62, 20), true},
		{"npm token", "npm_" + generated(10, base62, 36), true},
		{"Hugging Face token", "hf_" + generated(11, base62, 34), true},

		{"the GitHub prefix in prose", "fine-grained tokens start with github_pat_ and 82 characters", false},
		{"a Stripe publishable key is public", "pk_live_" + generated(12, base62, 24), false},
		{"sk_live_ too short to be a key", "the prefix sk_live_abc marks live keys", false},
		{"a word that starts AIza", "AIzawesome is not a key at all, friends", false},
		{"glpat- in prose", "GitLab tokens start with glpat- and are revocable", false},
		{"an npm config variable", "npm_config_registry=https://registry.npmjs.org", false},
		{"a Hugging Face function", "huggingface_hub.hf_hub_download(repo_id, filename)", false},
		{"an identifier with a digest", "spaceboot-" + generated(13, hexits, 12) + " in zorp", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "value: " + tc.in + " (end)"
			got := String(text)
			if tc.redacted {
				if want := "value: " + Redacted + " (end)"; got != want {
					t.Errorf("String(%q) = %q, want %q", text, got, want)
				}
				return
			}
			if got != text {
				t.Errorf("String(%q) = %q: redacted what is not a credential", text, got)
			}
		})
	}
}

// What looks generated, assigned to a name that says it is secret, is redacted in
// text (an env file, YAML front matter, JSON in a string); a name, a reference or a
// placeholder in the same place is not, nor a generated value under another name.
func TestStringRedactsGeneratedValuesOfSecretNames(t *testing.T) {
	key := generated(20, base62, 32)
	for _, tc := range []struct{ name, in, want string }{
		{"env", "DB_PASSWORD=" + key + "\nDB_HOST=db", "DB_PASSWORD=" + Redacted + "\nDB_HOST=db"},
		{"YAML", "---\napiToken: " + key + "\n---\n", "---\napiToken: " + Redacted + "\n---\n"},
		{"JSON", `{"client_secret": "` + key + `", "n": 1}`, `{"client_secret": "` + Redacted + `", "n": 1}`},
		{"JSON in JSON", `{\"privateKey\":\"` + key + `\"}`, `{\"privateKey\":\"` + Redacted + `\"}`},
		{"hex digest as a token", "token=" + generated(21, hexits, 40), "token=" + Redacted},
		{"UUID as an API key", "x-api-key: 3f2b8c1e-9d4a-4e7b-8f6c-2a1d5e9b7c3f", "x-api-key: " + Redacted},

		{"a Secret's name", "passwordSecret: db-credentials-prod-2024", "passwordSecret: db-credentials-prod-2024"},
		{"a name ending in token", "token: spaceboot-0123456789", "token: spaceboot-0123456789"},
		{"a reference", "password: vault:secret/data/app#password", "password: vault:secret/data/app#password"},
		{"a placeholder", "DB_PASSWORD=${DB_PASSWORD_FROM_VAULT}", "DB_PASSWORD=${DB_PASSWORD_FROM_VAULT}"},
		{"a URL", "token_url: https://idp.example.com/oauth2/v1/token", "token_url: https://idp.example.com/oauth2/v1/token"},
		{"a name that is not secret", "secretName: " + key, "secretName: " + key},
		{"a generated id under another name", "requestId: " + key, "requestId: " + key},
		{"a progress token", "progressToken: " + key, "progressToken: " + key},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := String(tc.in); got != tc.want {
				t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

type secretString string

// A generated value in a slot whose name says it is secret (an instance's apiToken,
// a map's password) is redacted though no key format matches it, in every shape a
// map takes on the way out: decoded JSON, string maps, maps reached by reflection,
// raw JSON, and the strings of a list under the key. Ordinary words and
// identifiers there, and generated values under other names, are kept.
func TestValueRedactsGeneratedValuesOfSecretNamedKeys(t *testing.T) {
	for _, tc := range []struct {
		name, key, value string
		redacted         bool
	}{
		{"base62 API key", "apiKey", generated(30, base62, 32), true},
		{"mixed-case password", "password", generated(31, base62, 16), true},
		{"env-style name", "DB_PASSWORD", generated(32, base62, 24), true},
		{"hex token", "accessToken", generated(33, hexits, 64), true},
		{"UUID credential", "credential", "3f2b8c1e-9d4a-4e7b-8f6c-2a1d5e9b7c3f", true},
		{"base64 secret", "client-secret", "dGhpcyBpcyBhIHNlY3JldCB2YWx1ZQ==", true},
		{"private key body", "private_key", generated(34, base62+"+/", 120), true},
		{"AWS secret access key", "aws_secret_access_key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", true},

		{"a Secret's name", "credentials", "db-credentials-prod-2024", false},
		{"an instance name", "token", "spaceboot-0123456789", false},
		{"words", "passphrase", "correct-horse-battery-staple", false},
		{"a reference", "password", "vault:secret/data/app#password", false},
		{"a placeholder", "secret", "${DB_PASSWORD_FROM_VAULT}", false},
		{"a short value", "password", "hunter2", false},
		{"a repeated pattern", "token", "a1a1a1a1a1a1a1a1a1a1", false},
		{"a timestamp", "token", "2024-01-15T10:30:00Z", false},
		{"prose", "secret", "Rotated every 90 days by the platform team.", false},
		{"a name that ends otherwise", "secretName", generated(35, base62, 32), false},
		{"a token's type", "tokenType", generated(36, base62, 32), false},
		{"a generated id", "uid", "3f2b8c1e-9d4a-4e7b-8f6c-2a1d5e9b7c3f", false},
		{"a progress token", "progressToken", generated(37, base62, 32), false},
		{"a page token", "nextPageToken", generated(38, base62, 32), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.value
			if tc.redacted {
				want = Redacted
			}
			nested := map[string]any{"spec": map[string]any{tc.key: tc.value, "other": "kept"}}
			got := Value(nested).(map[string]any)["spec"].(map[string]any)
			if got[tc.key] != want || got["other"] != "kept" {
				t.Errorf("decoded JSON: %v", got)
			}
			if nested["spec"].(map[string]any)[tc.key] != tc.value {
				t.Errorf("Value modified its argument")
			}
			if got := Value(map[string]string{tc.key: tc.value}).(map[string]string); got[tc.key] != want {
				t.Errorf("map[string]string: %v", got)
			}
			if got := Value(map[string]secretString{tc.key: secretString(tc.value)}).(map[string]secretString); string(got[tc.key]) != want {
				t.Errorf("a map reached by reflection: %v", got)
			}
			list := Value(map[string]any{tc.key: []any{tc.value, 3.0}}).(map[string]any)[tc.key].([]any)
			if list[0] != want || list[1] != 3.0 {
				t.Errorf("a list: %v", list)
			}
			raw, _ := json.Marshal(map[string]string{tc.key: tc.value})
			var doc map[string]string
			if err := json.Unmarshal(Value(json.RawMessage(raw)).(json.RawMessage), &doc); err != nil || doc[tc.key] != want {
				t.Errorf("raw JSON: %v (%v)", doc, err)
			}
		})
	}
}
