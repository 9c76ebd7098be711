#!/bin/sh
# One shard of a faultlab campaign, as each CI runner runs it (docs/sharding.md):
#
#   examples/ci/shard.sh K N OUT [faultlab explore arguments...]
#   examples/ci/shard.sh 2 4 shard-2 scenarios/ --faults all --jobs 2
#
# Runs `faultlab explore ... --shard K/N` and copies the shard's run
# directory to OUT: a plain directory (no `latest` symlink), ready to upload
# as a CI artifact.  Exits 0 when the shard ran, whatever its verdicts (the
# merge of every shard judges the campaign), and with faultlab's own exit
# status when the shard could not run (2: a usage error, 3: internal).
set -u
if [ "$#" -lt 3 ]; then
    echo "usage: $0 K N OUT [faultlab explore arguments...]" >&2
    exit 2
fi
k=$1 n=$2 out=$3
shift 3
faultlab explore "$@" --shard "$k/$n" --report-dir "$out.reports"
code=$?
if [ "$code" -gt 1 ]; then
    exit "$code"
fi
rm -rf "$out"
cp -R "$(readlink -f "$out.reports/latest")" "$out"
