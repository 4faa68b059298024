#!/usr/bin/env bash
# Runs every fuzz target for FUZZTIME each (default 10s), one after another.
# A crasher the fuzzer finds is written under the package's testdata/fuzz/
# and fails the script: commit it as a regression input once fixed.
# The engine's own trouble (a worker that did not answer in time on a busy
# machine) is reported and does not count as a finding.
set -uo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-10s}
targets=(
  "./loop/ FuzzJournal"
  "./loop/ FuzzQuickArgs"
  "./loop/ FuzzTaskKey"
  "./agentdef/ FuzzParse"
  "./agentdef/ FuzzParseSkill"
  "./mcp/ FuzzForwardLines"
  "./mcp/ FuzzResult"
  "./tagproto/ FuzzSpawn"
  "./tagproto/ FuzzTag"
  "./tagproto/ FuzzParseSpawn"
  "./tagproto/ FuzzTagExtract"
  "./model/openai/ FuzzStream"
  "./model/anthropic/ FuzzStream"
  "./schema/ FuzzValidate"
  "./tool/ FuzzResolve"
  "./tool/builtin/ FuzzFetchRule"
  "./tool/builtin/ FuzzHTMLText"
  "./rule/ FuzzCommand"
  "./redact/ FuzzString"
  "./ FuzzEventJSON"
  "./internal/eventlines/ FuzzDecode"
  "./internal/agentrec/ FuzzDecode"
  "./internal/jsonw/ FuzzAppendString"
  "./internal/jsonw/ FuzzAppendFloat"
  "./internal/cli/ FuzzConfig"
)
failed=0
for t in "${targets[@]}"; do
  set -- $t
  pkg=$1 name=$2
  out=$(go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -parallel 1 "$pkg" 2>&1)
  rc=$?
  execs=$(printf '%s\n' "$out" | grep -o 'execs: [0-9]*' | tail -1)
  if printf '%s\n' "$out" | grep -q 'no fuzz tests to fuzz'; then
    echo "fuzz $pkg $name: there is no such fuzz target: correct the list in .ci/fuzz.sh"
    failed=1
  elif [ $rc -eq 0 ]; then
    echo "fuzz $pkg $name: ok (${execs:-execs: ?})"
  elif printf '%s\n' "$out" | grep -q 'Failing input written to'; then
    echo "fuzz $pkg $name: FOUND A FAILING INPUT"
    printf '%s\n' "$out" | tail -30
    failed=1
  else
    why=$(printf '%s\n' "$out" | grep -v -e '^FAIL' -e '^--- FAIL' -e '^exit status' -e '^ok ' | tail -3 | tr -s ' \n' ' ')
    echo "fuzz $pkg $name: the fuzzer itself stopped, not on a finding: $why"
  fi
done
exit $failed
