// Copyright 2026 The Sandbar Authors.
// SPDX-License-Identifier: Apache-2.0
//
// What the client scripts share: a failed expectation (reported as FAIL, not as a
// crash) and the text of a tool result.

export class CheckFailed extends Error {}

export function check(cond, msg) {
  if (!cond) throw new CheckFailed(msg);
}

export function textOf(result) {
  return (result.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}
