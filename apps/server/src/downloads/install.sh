#!/bin/sh
# Installs gadget-drone, the program that lends this machine to a Gadget Code server, for the
# current user (no root): checks Node.js, downloads the server's drone package, verifies its
# sha256, unpacks it under $GADGET_DRONE_PREFIX (default ~/.local), and with --token registers it.
#   curl -fsSL <server>/install.sh | sh -s -- --token <token> [--name <name>] [other register options]
set -eu

default_server='@SERVER_URL@'
server="${GADGET_DRONE_SERVER:-$default_server}"
server="${server%/}"
prefix="${GADGET_DRONE_PREFIX:-$HOME/.local}"

say() { printf '%s\n' "$*" >&2; }
fail() {
  say "gadget-drone install: $*"
  exit 1
}

# --token <t> is ours; every other argument goes to `gadget-drone register`.
token=""
want_token=0
for argument do
  shift
  if [ "$want_token" = 1 ]; then
    token="$argument"
    want_token=0
    continue
  fi
  case "$argument" in
    --token) want_token=1 ;;
    --token=*) token="${argument#--token=}" ;;
    *) set -- "$@" "$argument" ;;
  esac
done
[ "$want_token" = 0 ] || fail "--token needs a value"

# Node.js 20.19 or newer runs the drone.
node_help="Install Node.js 20.19 or newer (https://nodejs.org/en/download, or: nvm install 22, brew install node, or your distribution's nodejs package), then run this again."
command -v node >/dev/null 2>&1 || fail "Node.js was not found. $node_help"
node_version="$(node --version 2>/dev/null || true)"
node_major="${node_version#v}"
node_major="${node_major%%.*}"
node_minor="${node_version#v*.}"
node_minor="${node_minor%%.*}"
case "$node_major.$node_minor" in
  *[!0-9.]* | .* | *.) fail "Could not tell the version of Node.js ($node_version). $node_help" ;;
esac
if [ "$node_major" -lt 20 ] || { [ "$node_major" -eq 20 ] && [ "$node_minor" -lt 19 ]; }; then
  fail "Node.js $node_version is too old. $node_help"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/gadget-drone-install.XXXXXX")"
trap 'rm -rf "$work"' EXIT INT TERM

# curl or wget when there is one; else Node's own fetch.
download() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL "$1" -o "$2"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1"
  else
    node -e 'const [url, file] = process.argv.slice(1); fetch(url).then(async (r) => { if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`); require("node:fs").writeFileSync(file, Buffer.from(await r.arrayBuffer())); }).catch((e) => { console.error(e.message); process.exit(1); })' "$1" "$2"
  fi
}

download "$server/downloads/gadget-drone.json" "$work/package.json" ||
  fail "could not fetch $server/downloads/gadget-drone.json"
# One line: the version, the sha256 and the URL.
described="$(node -e '
const info = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"));
const ok = [info.version, info.sha256, info.url].every((value) => typeof value === "string" && /^[^\s]+$/.test(value));
process.stdout.write(ok ? `${info.version} ${info.sha256} ${info.url}` : "");
' "$work/package.json")" && [ -n "$described" ] || fail "$server/downloads/gadget-drone.json is not a drone package description"
version="${described%% *}"
described="${described#* }"
expected="${described%% *}"
url="${described#* }"
# The package comes from this server, whatever host its metadata names.
case "$url" in
  */downloads/*) url="$server/downloads/${url##*/downloads/}" ;;
esac

say "Downloading gadget-drone $version from $server…"
download "$url" "$work/gadget-drone.tgz" || fail "could not fetch $url"
if command -v sha256sum >/dev/null 2>&1; then
  actual="$(sha256sum "$work/gadget-drone.tgz")"
elif command -v shasum >/dev/null 2>&1; then
  actual="$(shasum -a 256 "$work/gadget-drone.tgz")"
else
  actual="$(node -e 'process.stdout.write(require("node:crypto").createHash("sha256").update(require("node:fs").readFileSync(process.argv[1])).digest("hex"))' "$work/gadget-drone.tgz")"
fi
actual="${actual%% *}"
if [ "$actual" != "$expected" ]; then
  fail "the package's sha256 is $actual, the server says $expected: refusing to install it"
fi

# Beside any version already there; `current` names the one that runs.
library="$prefix/lib/gadget-drone"
target="$library/versions/$version"
mkdir -p "$work/unpacked" "$library/versions" "$prefix/bin"
tar -xzf "$work/gadget-drone.tgz" -C "$work/unpacked"
[ -f "$work/unpacked/package/bin/gadget-drone.js" ] || fail "the package has no bin/gadget-drone.js"
rm -rf "$target.new"
mv "$work/unpacked/package" "$target.new"
rm -rf "$target"
mv "$target.new" "$target"
chmod +x "$target/bin/gadget-drone.js"
# Its start check before it becomes the one that runs: registering runs it, else --version.
if [ -n "$token" ]; then
  node "$target/bin/gadget-drone.js" register --server "$server" --token "$token" "$@" ||
    fail "gadget-drone $version is unpacked in $target but could not register (see above)"
else
  installed="$(node "$target/bin/gadget-drone.js" --version 2>&1)" ||
    fail "the installed gadget-drone does not start: $installed"
fi
rm -rf "$library/current"
ln -s "versions/$version" "$library/current"
rm -f "$prefix/bin/gadget-drone"
ln -s "../lib/gadget-drone/current/bin/gadget-drone.js" "$prefix/bin/gadget-drone"
command="$prefix/bin/gadget-drone"
say "Installed gadget-drone $version in $target ($command)."

case ":${PATH:-}:" in
  *":$prefix/bin:"*) start="gadget-drone start" ;;
  *)
    start="$command start"
    say "Add $prefix/bin to your PATH to type just gadget-drone."
    ;;
esac
if [ -n "$token" ]; then
  say "Start it with:"
else
  say "Register it with \`gadget-drone register --server $server --token <token>\`, then start it with:"
fi
printf '%s\n' "  $start"
say "Or keep it running as a service: ${start% start} service install"
