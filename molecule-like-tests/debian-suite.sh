# shellcheck shell=bash
# Sourced by the scripts that make Debian roots with mmdebstrap (image, ceph-release-root), after
# they set SUITE (bookworm, trixie) and APT_STATE (a dir of their own in the cache): the suite's
# archive, the dpkg options of a slim root, and a private apt state over that archive to read
# what it holds without touching the machine's own apt.

MIRRORS=(
    "deb http://deb.debian.org/debian $SUITE main"
    "deb http://deb.debian.org/debian $SUITE-updates main"
    "deb http://deb.debian.org/debian-security $SUITE-security main"
)
# Docs, man pages and locales left out, as Debian's slim images leave them out.
SLIM_DPKG=(
    --dpkgopt='path-exclude=/usr/share/man/*'
    --dpkgopt='path-exclude=/usr/share/doc/*'
    --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-exclude=/usr/share/locale/*'
    --dpkgopt='path-exclude=/usr/share/info/*'
)

# apt_private apt-get|apt-cache ARGS...: over APT_STATE only.
apt_private() {
    "$1" -q -o Dir::State="$APT_STATE" -o Dir::State::Status="$APT_STATE/status" \
        -o Dir::Cache="$APT_STATE/cache" -o Dir::Etc::SourceList="$APT_STATE/sources.list" \
        -o Dir::Etc::SourceParts="$APT_STATE/none" -o Dir::Etc::Preferences="$APT_STATE/none" \
        -o Dir::Etc::PreferencesParts="$APT_STATE/none" -o APT::Sandbox::User=root \
        -o Debug::NoLocking=1 "${@:2}"
}

# apt_refresh: the suite's lists read again into APT_STATE, as on an empty system.
apt_refresh() {
    mkdir -p "$APT_STATE/lists/partial" "$APT_STATE/cache/archives/partial" "$APT_STATE/none"
    printf '%s\n' "${MIRRORS[@]}" > "$APT_STATE/sources.list"
    : > "$APT_STATE/status"
    apt_private apt-get update >/dev/null
}
