# Sourced by the setup scripts. npm_unpack PACKAGE VERSION DIR: replaces DIR with the contents of
# the npm package's tarball (npm is the one registry for these; nothing else is downloaded).
npm_unpack() {
  local package="$1" version="$2" dir="$3" tmp
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "$package@$version" >/dev/null)
  rm -rf "$dir" && mkdir -p "$dir"
  tar -xzf "$tmp/$package-$version.tgz" -C "$dir" --strip-components=1
  rm -rf "$tmp"
}
