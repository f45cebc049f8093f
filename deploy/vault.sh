#!/bin/sh
# One vault of a network on a container host (deploy/compose.yaml): plots
# once into its volume, then runs `spacevault node`. The first vault
# (SPACEVAULT_FIRST=1) writes the chain spec and its own address into the
# volume every vault shares; the others wait for them and bootstrap from
# it. Every vault adds its API URL to the shared network file that
# `spacevault stress --network` reads.
set -eu

shared=${SPACEVAULT_SHARED:-/shared}
data=${SPACEVAULT_DATA:-/data}
k=${SPACEVAULT_K:-18}
p2p_port=7733
api_port=8733
me=$(hostname)
ip=$(hostname -i | cut -d' ' -f1)

mkdir -p "$data" "$shared"
if [ ! -f "$data/plots/.done" ]; then
    # A plot cut short by a restart is made again from the start.
    rm -rf "$data/plots"
    spacevault plot -k "$k" --out "$data/plots"
    touch "$data/plots/.done"
fi

if [ "${SPACEVAULT_FIRST:-0}" = 1 ]; then
    if [ ! -f "$shared/spec.json" ]; then
        spacevault chain init --replication "${SPACEVAULT_REPLICATION:-4}" \
            --out "$shared/spec.json.tmp"
        mv "$shared/spec.json.tmp" "$shared/spec.json"
    fi
    peer=$(spacevault identity | sed -n 's/^peer id *//p')
    echo "/ip4/$ip/tcp/$p2p_port/p2p/$peer" > "$shared/bootstrap.tmp"
    mv "$shared/bootstrap.tmp" "$shared/bootstrap"
    set -- --timekeeper
else
    waited=0
    until [ -f "$shared/spec.json" ] && [ -f "$shared/bootstrap" ]; do
        if [ "$waited" -ge 600 ]; then
            echo "no chain spec and bootstrap address in $shared after 600 s: is the first vault running?" >&2
            exit 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
    set -- --bootstrap "$(cat "$shared/bootstrap")"
fi

# The API URL as the other containers reach it, once (a restart keeps it).
url="http://$ip:$api_port"
touch "$shared/network.txt"
grep -qx "$url" "$shared/network.txt" || echo "$url" >> "$shared/network.txt"

exec spacevault node --chain "$shared/spec.json" --plots "$data/plots" \
    --data "$data/store" --listen "/ip4/0.0.0.0/tcp/$p2p_port" \
    --api "0.0.0.0:$api_port" --api-host "$me" "$@"
