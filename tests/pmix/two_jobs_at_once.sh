#!/bin/sh
# Two 2x2 MPI jobs at the same time on the same simulated nodes (nodeA, nodeB): distinct
# namespaces and directories must keep them apart. usage: two_jobs_at_once.sh HARNESS MPI_HELLO
harness=$1 hello=$2
"$harness" --nodes 2 --ppn 2 --tag "$$.a" --min-fences 3 --max-dmodex 0 -- "$hello" 4 2 &
first=$!
"$harness" --nodes 2 --ppn 2 --tag "$$.b" --min-fences 3 --max-dmodex 0 -- "$hello" 4 2
second=$?
wait $first
first=$?
echo "two_jobs_at_once: first job exit $first, second job exit $second"
[ "$first" -eq 0 ] && [ "$second" -eq 0 ]
