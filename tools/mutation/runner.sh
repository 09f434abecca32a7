#!/usr/bin/env bash
# mutmut's test runner (docs/mutation-testing.md): the tests import the *installed* package, so the
# file mutmut just mutated in place is copied over its twin in a copy of the install (pure Python),
# then the module's fast tests run: MUTATION_TESTS (test files), MUTATION_K (a pytest -k expression, or
# none). Exit code 0: the mutant survived.
set -uo pipefail
cd "$(dirname "$0")/../.."
VENV=$(realpath "${TRT_TRACE_VENV:-.venv}")
# MUTATION_SITE: a copy of the installed package (first on PYTHONPATH) that the mutants are copied
# into, so that the venv's own install stays as built (docs/mutation-testing.md makes it).
: "${MUTATION_SITE:?give MUTATION_SITE: a folder holding a copy of the installed trt_trace package}"
: "${MUTATION_TESTS:?name the test files}"
SITE=$MUTATION_SITE/trt_trace
export PYTHONPATH=$MUTATION_SITE${PYTHONPATH:+:$PYTHONPATH}
for f in ${MUTATION_FILES:-trt_trace/runtime/session.py trt_trace/runtime/config.py trt_trace/runtime/flight.py}; do
  cp "$f" "$SITE/${f#trt_trace/}"
done
select=()
if [ -n "${MUTATION_K:-}" ]; then select=(-k "$MUTATION_K"); fi
# shellcheck disable=SC2086
"$VENV/bin/pytest" -x -q -p no:cacheprovider "${select[@]}" $MUTATION_TESTS
# mutmut 2 counts only exit code 1 as killed: a mutant that breaks the import (pytest's 2, 4) is killed too.
[ $? -eq 0 ] || exit 1
