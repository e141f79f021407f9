#!/bin/sh
# Entry point of the gadget-drone image: registers the drone on its first start (when no config
# exists yet), then serves work orders. With arguments it runs `gadget-drone <arguments>` instead,
# e.g. `docker compose run --rm drone status`.
#
# Environment: GADGET_DRONE_CONFIG (the config file, on a volume), GADGET_SERVER_URL and
# GADGET_REGISTRATION_TOKEN (first start only), GADGET_DRONE_NAME, GADGET_DRONE_CAPACITY (2),
# GADGET_DRONE_WORKSPACE (project checkouts; default: "workspaces" beside the config),
# GADGET_DRONE_NO_SANDBOX=1 (run commands without bubblewrap: the container is then the only
# boundary; for runtimes whose seccomp or AppArmor profile forbids user namespaces).
set -eu

config="${GADGET_DRONE_CONFIG:?GADGET_DRONE_CONFIG must name the config file}"
data_dir=$(dirname "$config")
# The hash of the token this volume was registered with: a token is single use, so after
# `gadget-drone unregister` the same one must not be tried again in a restart loop.
spent="$data_dir/.registration-token.sha256"

if [ "$#" -gt 0 ]; then
  exec gadget-drone "$@"
fi

# Nothing to register with: say what to do and wait (unhealthy) instead of restarting in a loop;
# a new token means a new container anyway.
wait_for_token() {
  sleeper=
  trap 'kill $sleeper 2>/dev/null; exit 0' TERM INT
  while :; do
    echo "gadget-drone: not registered: $1" >&2
    echo "  Create a registration token in the web IDE (Drones -> Add a drone) or with" >&2
    echo "  POST /api/drones/registration-tokens, set GADGET_REGISTRATION_TOKEN (and" >&2
    echo "  GADGET_SERVER_URL), then recreate this container: docker compose up -d drone" >&2
    sleep 60 &
    sleeper=$!
    wait $sleeper || true
  done
}

token_hash() {
  printf '%s' "$GADGET_REGISTRATION_TOKEN" | sha256sum | cut -d ' ' -f 1
}

if [ ! -f "$config" ]; then
  if [ -z "${GADGET_REGISTRATION_TOKEN:-}" ] || [ -z "${GADGET_SERVER_URL:-}" ]; then
    wait_for_token "GADGET_REGISTRATION_TOKEN or GADGET_SERVER_URL is not set."
  fi
  if [ -f "$spent" ] && [ "$(cat "$spent")" = "$(token_hash)" ]; then
    wait_for_token "GADGET_REGISTRATION_TOKEN was used already (the drone was unregistered since)."
  fi
  set -- register --server "$GADGET_SERVER_URL" --token "$GADGET_REGISTRATION_TOKEN" \
    --config "$config" --workspace "${GADGET_DRONE_WORKSPACE:-$data_dir/workspaces}" \
    --capacity "${GADGET_DRONE_CAPACITY:-2}"
  if [ -n "${GADGET_DRONE_NAME:-}" ]; then
    set -- "$@" --name "$GADGET_DRONE_NAME"
  fi
  gadget-drone "$@"
  token_hash > "$spent"
  set --
fi

# The token is spent now; the agent's commands need not see it.
unset GADGET_REGISTRATION_TOKEN
# A runtime.json left by an earlier container would make the healthcheck pass before we connect.
rm -f "$data_dir/runtime.json"
if [ "${GADGET_DRONE_NO_SANDBOX:-}" = "1" ]; then
  exec gadget-drone start --config "$config" --json --no-sandbox
fi
exec gadget-drone start --config "$config" --json
