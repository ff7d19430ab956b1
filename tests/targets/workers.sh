#!/bin/sh
# A shell wrapper that starts two Python workers and one Ruby worker:
#   workers.sh PYTHON SCRIPT.py RUBY SCRIPT.rb
"$1" "$2" >/dev/null &
"$1" "$2" >/dev/null &
"$3" "$4" >/dev/null &
sleep 1
echo ready
wait
