#!/bin/sh
# One vault of a network on a container host (deploy/compose.yaml): plots
# once into its volume, then runs `spacevault node`. The first vault
# (SPACEVAULT_FIRST=1) writes the chain spec and its own address into the
# directory every vault shares; the others wait for them and bootstrap
# from it. Every vault writes its API URL to urls/HOSTNAME there, for
# `spacevault stress --network`.
set -eu

shared=${SPACEVAULT_SHARED:-/shared}
data=${SPACEVAULT_DATA:-/data}
k=${SPACEVAULT_K:-18}
p2p_port=7733
api_port=8733
me=$(hostname)
# The address the other vaults and the stress test reach this one at: the
# container's first IPv4 address unless given (on several hosts, the
# host's own, with the ports published).
ip=${SPACEVAULT_ADDRESS:-$(hostname -i | tr ' ' '\n' | grep -v : | head -n 1)}
if [ -z "$ip" ]; then
    echo "no IPv4 address for this vault: set SPACEVAULT_ADDRESS" >&2
    exit 1
fi

mkdir -p "$data" "$shared/urls"
if [ "${SPACEVAULT_FIRST:-0}" = 1 ]; then
    # An earlier network's address must not be taken for this one's.
    rm -f "$shared/bootstrap"
fi
if [ ! -f "$data/plots/.done" ]; then
    # A plot cut short by a restart is made again from the start.
    rm -rf "$data/plots"
    spacevault plot -k "$k" --out "$data/plots"
    touch "$data/plots/.done"
fi

if [ "${SPACEVAULT_FIRST:-0}" = 1 ]; then
    if [ ! -f "$shared/spec.json" ]; then
        # The space the network starts with sets its first target: a
        # block every two slots from the start.
        vaults=${SPACEVAULT_VAULTS:-4}
        spacevault chain init --replication "${SPACEVAULT_REPLICATION:-4}" \
            --initial-records "$((vaults << k))" --out "$shared/spec.json.tmp"
        mv "$shared/spec.json.tmp" "$shared/spec.json"
    fi
    peer=$(spacevault identity | sed -n 's/^peer id *//p')
    if [ -z "$peer" ]; then
        echo "no peer id from spacevault identity" >&2
        exit 1
    fi
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

# This vault's API URL as the others reach it, written afresh at each
# start (a restarted container may have another address).
echo "http://$ip:$api_port" > "$shared/urls/$me.tmp"
mv "$shared/urls/$me.tmp" "$shared/urls/$me"

exec spacevault node --chain "$shared/spec.json" --plots "$data/plots" \
    --data "$data/store" --listen "/ip4/0.0.0.0/tcp/$p2p_port" \
    --api "0.0.0.0:$api_port" --api-host "$me" "$@"
