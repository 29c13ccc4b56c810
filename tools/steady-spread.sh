#!/usr/bin/env bash
# The closed loop's steady-state window over seeded runs on the embedded
# sim: each run's window and throughputs, then their run-to-run spread
# (max - min over the mean), issue 43's "a steady-state window at c=64,
# its throughput's spread over 5 seeded runs (goal <= 2 %)". Needs jq.
#
#   tools/steady-spread.sh [RUNS [CONCURRENCY [DURATION]]]   # 5 64 30s
set -euo pipefail
runs=${1:-5} c=${2:-64} dur=${3:-30s}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/infertop" .
echo "infertop run -c $c --duration $dur --seed N --json N.json, N = 1..$runs (load average $(cut -d' ' -f1-3 /proc/loadavg))"
for s in $(seq 1 "$runs"); do
	"$dir/infertop" run -c "$c" --duration "$dur" --seed "$s" --json "$dir/$s.json" >"$dir/$s.log" 2>&1 || { cat "$dir/$s.log" >&2; exit 1; }
	jq -r --arg s "$s" '.infertop.steady_state // {reached: false} | if .reached then
		"seed \($s): steady from \(.start_s * 1000 | round) ms to \(.end_s * 1000 | round) ms, \(.completed) requests, \(.request_throughput * 100 | round / 100) req/s, \(.output_throughput * 10 | round / 10) output tok/s"
		else "seed \($s): not steady" end' "$dir/$s.json"
done
jq -s -r 'map(.infertop.steady_state | select(.reached)) | if length < 2 then "fewer than two steady windows: no spread" else
	def spread(k): (map(.[k]) | (max - min) / (add / length) * 100 * 100 | round / 100);
	"spread over \(length) runs: output throughput \(spread("output_throughput")) %, request throughput \(spread("request_throughput")) %" end' "$dir"/*.json
