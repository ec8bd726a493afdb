#!/usr/bin/env bash
# ASan + UBSan build of core, the CLI, the core tests and the libFuzzer targets (clang, no GUI), then the
# core tests (all but the three long multi-process ones) under the sanitizers and each fuzzer for FUZZ_SECONDS (default 10) from tests/fuzz/corpus.
# Usage: scripts/check-sanitizers.sh [--fuzz-only] [--no-fuzz]; FUZZ_SECONDS=600 for the long measurement.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
run_tests=1 run_fuzz=1
for arg in "$@"; do
  case "$arg" in
    --fuzz-only) run_tests=0 ;;
    --no-fuzz) run_fuzz=0 ;;
    *) echo "check-sanitizers: unknown argument: $arg" >&2; exit 2 ;;
  esac
done
seconds=${FUZZ_SECONDS:-10}
build=${SANITIZE_BUILD_DIR:-build-asan}

if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang libclang-rt-14-dev >/dev/null
fi
bash scripts/install-deps.sh

# -O1 keeps the instrumented build and its stacks quick; LibTorch's kernels are not instrumented anyway.
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DTRAINLAB_GUI=OFF -DTRAINLAB_TESTS=ON \
  -DTRAINLAB_SANITIZE=ON -DTRAINLAB_FUZZ=ON >/dev/null || exit 1
# The tests run below, the CLI they drive and the fuzzers: not tst_resume, tst_killpoints, tst_queue.
sanitized_tests="tst_config tst_idx tst_model tst_trainer tst_engine tst_cli tst_sha256 tst_datasetstore tst_sweep tst_hostile tst_optimizer tst_devicemonitor tst_evaluation tst_tensorboard tst_launcher"
[ -d "$build/tests/CMakeFiles/tst_download.dir" ] && sanitized_tests+=" tst_download"
# shellcheck disable=SC2086  # the list is words
cmake --build "$build" -j "$(nproc)" --target trainlab-cli $sanitized_tests fuzz_config fuzz_sweep fuzz_idx fuzz_records || exit 1

supp="$PWD/tests/sanitizers"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_odr_violation=0:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="suppressions=$supp/ubsan.supp:print_stacktrace=1:halt_on_error=1"
status=0
if [ "$run_tests" = 1 ]; then
  # tst_resume, tst_killpoints and tst_queue train ResNet-18 for dozens of epochs in many processes; under
  # ASan, whose allocator maps every large LibTorch buffer afresh, that is about ten times slower (over
  # 20 minutes), so they run in the ordinary build only. Every other core test runs here.
  # tst_cli's rows that wait on peers, timeouts and signals run in the main build only (TRAINLAB_TEST_SHORT),
  # as do tst_trainer's rows about learning and two more CLI paths (SKIP_WHEN_SANITIZED in tests/testutil.h).
  (cd "$build" && TRAINLAB_TEST_SHORT=1 ctest --output-on-failure -j1 -E '^tst_(resume|killpoints|queue)$') || status=1
fi
if [ "$run_fuzz" = 1 ]; then
  printf '%-12s %10s %8s %s\n' target execs crashes result
  for target in fuzz_config fuzz_sweep fuzz_idx fuzz_records; do
    name=${target#fuzz_}
    work=$(mktemp -d)
    rm -f "$build/$target-"*
    log="$build/$target.log"
    # A fresh corpus folder gets what this run finds; the tracked seeds are only read.
    "$build/tests/fuzz/$target" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
      -artifact_prefix="$build/$target-" "$work" "tests/fuzz/corpus/$name" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    crashes=$(ls "$build/$target-"* 2>/dev/null | wc -l)
    result=ok
    if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
      result="FAILED (exit $rc, see $log)"
      status=1
      tail -40 "$log"
    fi
    printf '%-12s %10s %8s %s\n' "$target" "${execs:-?}" "$crashes" "$result"
    rm -rf "$work"
  done
fi
exit $status
