#!/usr/bin/env bash
# Prints the release notes of one version: the body of its section in CHANGELOG.md, the
# lines under "## [X.Y.Z]" (with or without " - <date>") up to the next "## " heading or
# the link definitions at the end, without the blank lines around them. Fails when the
# version has no section or an empty one, so that a tag pushed before its notes were
# written releases nothing.
#   hack/release-notes.sh 0.2.0 [CHANGELOG.md]
set -euo pipefail
version=${1:?usage: $0 <version, as 0.2.0> [changelog]}
changelog=${2:-$(dirname "$0")/../CHANGELOG.md}
version=${version#v}

notes=$(awk -v want="$version" '
	/^## / {
		if (found) exit
		heading = $0
		sub(/^## +/, "", heading)
		sub(/ +-.*$/, "", heading)
		gsub(/\[|\]/, "", heading)
		if (heading == want) found = 1
		next
	}
	found && /^\[[^]]+\]: / { exit }
	found { print }
' "$changelog" | sed -e '/./,$!d')

if [ -z "$(printf '%s' "$notes" | tr -d '[:space:]')" ]; then
	echo "$changelog has no notes for $version: add a section \"## [$version] - <date>\"" >&2
	exit 1
fi
printf '%s\n' "$notes"
