#!/usr/bin/env bash
# sluice: compare the criterion bench of the per-statement path (benches/statement.rs)
# with its budget (benches/README.md, "benches/statement.rs"). A check to run by hand
# or in a nightly job on a quiet machine, not a timed test of the suite: wall-clock
# budgets fail on a loaded machine, so the load average is printed beside the verdict.
#
# Usage: benches/budget.sh               # runs `cargo bench --bench statement`, then compares
#        SKIP_RUN=1 benches/budget.sh    # compares the last run's results (target/criterion)
#        SLACK=1.5 benches/budget.sh     # allow 50 % over budget (a loaded machine)
# Exit status: 0 all within budget, 1 one or more over, 2 a result is missing.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
SLACK=${SLACK:-1.0}

# bench name (as in statement.rs) | budget in ns per iteration (median)
BUDGETS=(
  "classify point select|1500"
  "classify range order|2000"
  "classify+plan+gate point select|2000"
  "memo point select|400"
  "memo+plan+gate point select|800"
  "relay framing point select response|200"
)

if [ -z "${SKIP_RUN:-}" ]; then
  nice cargo bench --bench statement -- --noplot >&2
fi

crit=${CARGO_TARGET_DIR:-$repo/target}/criterion
status=0
printf '%-40s %12s %12s  %s\n' bench "median ns" "budget ns" verdict
for entry in "${BUDGETS[@]}"; do
  name=${entry%|*}
  budget=${entry#*|}
  # criterion 0.5 names the directory after the bench, with ?"/\*<>:|^
  # replaced by '_' (report::make_filename_safe; spaces are kept).
  dir=$crit/$(printf '%s' "$name" | sed 's/[?"/\\*<>:|^]/_/g')/new
  if [ ! -f "$dir/estimates.json" ]; then
    printf '%-40s %12s %12s  %s\n' "$name" - "$budget" "MISSING ($dir/estimates.json)"
    status=2
    continue
  fi
  median=$(python3 -c 'import json,sys; print("%.1f" % json.load(open(sys.argv[1]))["median"]["point_estimate"])' "$dir/estimates.json")
  verdict=$(awk -v m="$median" -v b="$budget" -v s="$SLACK" 'BEGIN { print (m <= b * s) ? "within budget" : "OVER BUDGET" }')
  [ "$verdict" = "OVER BUDGET" ] && [ "$status" = 0 ] && status=1
  printf '%-40s %12s %12s  %s\n' "$name" "$median" "$budget" "$verdict"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs (SLACK=$SLACK)"
exit "$status"
