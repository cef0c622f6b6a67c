#!/bin/bash
cd "$(dirname "$0")/../.."  # the checkout
B=/tmp/scale-before; N=build/bin; R=/tmp/scale-bench
run() { name=$1; shift; echo "=== $name: $*" ; timeout 170 "$@" --json $R/$name.json > $R/$name.out 2>&1; echo "rc=$?"; grep -E 'ingest|p99|controller|placed|submitted|reports:|errors|result' $R/$name.out | head -20; }
run i2k-before $B/dcu-loadgen --controller-bin $B/dcu-controller --agents 2000 --duration 10 --warmup 3
run i2k-after  $N/dcu-loadgen --controller-bin $N/dcu-controller --agents 2000 --duration 10 --warmup 3
run i2k-afterfull $N/dcu-loadgen --controller-bin $N/dcu-controller --agents 2000 --duration 10 --warmup 3 --full-reports
run i10k-before $B/dcu-loadgen --controller-bin $B/dcu-controller --agents 10000 --duration 10 --warmup 5
run i10k-after  $N/dcu-loadgen --controller-bin $N/dcu-controller --agents 10000 --duration 10 --warmup 5
run p-before $B/dcu-loadgen --controller-bin $B/dcu-controller --mode place --agents 2000 --deployments 5000 --report-interval 5
run p-after  $N/dcu-loadgen --controller-bin $N/dcu-controller --mode place --agents 2000 --deployments 5000 --report-interval 5
run p-after-single  $N/dcu-loadgen --controller-bin $N/dcu-controller --mode place --agents 2000 --deployments 5000 --report-interval 5 --deploy-batch 0
echo ALLDONE
