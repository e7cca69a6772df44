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

package transport

import (
	"errors"

	sjson "github.com/segmentio/encoding/json"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): not a gap: kept while
// anything reads a message ahead of the SDK
// (TestCanarySDKReadsMessagesAsTransportDoes).

// sdkFlags are the go-sdk's flags for its parser: member names are matched exactly,
// not case-insensitively as encoding/json does.
const sdkFlags = sjson.DontMatchCaseInsensitiveStructFields

// maxDepth is the deepest nesting of objects and arrays the SDK reads (go-sdk
// v1.8's internal/json refuses a deeper message before it parses it).
const maxDepth = 1000

var errTooDeep = errors.New("json: nested deeper than the server reads")

// Unmarshal reads JSON as the SDK reads a message: with the SDK's parser and its
// flags (member names matched exactly; what follows the first value is ignored),
// and nesting deeper than the SDK takes refused before it is parsed (that parser
// recurses, with no limit of its own). What the HTTP layer reads of a message ahead
// of the SDK is then what the SDK reads: a ping with a "Method" member as well is a
// ping to both.
func Unmarshal(data []byte, v any) error {
	if !shallow(data) {
		return errTooDeep
	}
	_, err := sjson.Parse(data, v, sdkFlags)
	return err
}

// shallow reports whether data nests objects and arrays maxDepth deep at most,
// counting the brackets outside strings.
func shallow(data []byte) bool {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch b {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			if depth++; depth > maxDepth {
				return false
			}
		case b == '}' || b == ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return true
}
