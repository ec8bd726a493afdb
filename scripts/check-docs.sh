#!/usr/bin/env bash
# Checks the documentation against the tree: README.md at most 200 lines, every relative link and image in
# README.md and docs/*.md resolves, and every key core/config.cpp (and core/sweeps/sweep.cpp) reads is in docs/configuration.md.
# Usage: scripts/check-docs.sh   (DOCS_ROOT=DIR checks a copy of the tree in DIR instead; exit 1 on any problem)
set -euo pipefail
cd "$(dirname "$0")/.."
root=${DOCS_ROOT:-$PWD}
cd "$root"

max_readme_lines=200
problems=()
fail() { problems+=("$1"); }

for f in README.md docs/configuration.md core/config.cpp core/sweeps/sweep.cpp; do
  [ -f "$f" ] || { echo "check-docs: $root/$f: missing" >&2; exit 1; }
done

# 1. README.md stays a short page for users; the details live in docs/.
readme_lines=$(wc -l < README.md)
if [ "$readme_lines" -gt "$max_readme_lines" ]; then
  fail "README.md: $readme_lines lines, at most $max_readme_lines (move the details into docs/)"
fi

# 2. Relative links and images. Prints FILE<TAB>LINE<TAB>TARGET for [text](target), ![alt](target), [ref]: target
# and src="target", outside fenced code blocks and inline code.
link_targets() {
  awk -v file="$1" '
    /^[ \t]*(```|~~~)/ { fenced = !fenced; next }
    fenced { next }
    {
      line = $0
      gsub(/`[^`]*`/, "", line)
      rest = line
      while ((at = index(rest, "](")) > 0) {
        rest = substr(rest, at + 2)
        end = index(rest, ")")
        if (end == 0) break
        print file "\t" NR "\t" substr(rest, 1, end - 1)
        rest = substr(rest, end + 1)
      }
      if (match(line, /^[ \t]*\[[^]]+\]:[ \t]+[^ \t]+/)) {
        def = substr(line, RSTART, RLENGTH)
        sub(/^[ \t]*\[[^]]+\]:[ \t]+/, "", def)
        print file "\t" NR "\t" def
      }
      rest = line
      while (match(rest, /src="[^"]*"/)) {
        print file "\t" NR "\t" substr(rest, RSTART + 5, RLENGTH - 6)
        rest = substr(rest, RSTART + RLENGTH)
      }
    }' "$1"
}

md_files=(README.md)
while IFS= read -r f; do md_files+=("$f"); done < <(find docs -name '*.md' -type f | sort)
links_checked=0
for md in "${md_files[@]}"; do
  dir=$(dirname "$md")
  while IFS=$'\t' read -r file line target; do
    target=${target#<}
    target=${target%%>*}
    target=${target%% *}                 # drop a "title"
    case $target in
      ''|'#'*|http://*|https://*|mailto:*) continue ;;
    esac
    path=${target%%#*}
    path=${path%%\?*}
    [ -n "$path" ] || continue
    links_checked=$((links_checked + 1))
    case $path in
      /*) resolved=".$path" ;;           # GitHub reads /x as the repository root
      *) resolved="$dir/$path" ;;
    esac
    [ -e "$resolved" ] || fail "$file:$line: link to \"$target\" does not resolve ($resolved does not exist)"
  done < <(link_targets "$md")
done

# 3. Configuration keys. Extracts, in order of appearance: Reader declarations (variable, JSON object, key prefix),
# READER.checkUnknown({"key", ...}) lists, READER.method("key") calls and helper(OBJECT, "key") calls on a
# Reader's object; a nested key is written with its prefix (dataset.path, axes.batch_size). The checkUnknown lists are
# every key a file may hold, so a key added there without documentation fails here.
extract_keys() {
  sed -E 's:^[[:space:]]*//.*$::' "$1" | tr '\n' ' ' | grep -oE \
    -e 'Reader[[:space:]]+[A-Za-z_][A-Za-z_0-9]*[[:space:]]*\([[:space:]]*[^,;()]*,[[:space:]]*"[^"]*"' \
    -e '[A-Za-z_][A-Za-z_0-9]*\.checkUnknown\([[:space:]]*\{[^}]*\}' \
    -e '[A-Za-z_][A-Za-z_0-9]*\.[A-Za-z_][A-Za-z_0-9]*\([[:space:]]*"[^"]*"' \
    -e '[A-Za-z_][A-Za-z_0-9]*(<[^(;]*>)?\([[:space:]]*\*?[A-Za-z_][A-Za-z_0-9]*[[:space:]]*,[[:space:]]*"[^"]*"' \
    | awk '
      function add(prefix, key) {
        if (key !~ /^[a-z][a-z0-9_]*$/) return
        full = prefix == "" ? key : prefix "." key
        if (!(full in seen)) { seen[full] = 1; print full }
      }
      /^Reader[ \t]/ {
        s = $0
        sub(/^Reader[ \t]+/, "", s)
        var = s; sub(/[ \t]*\(.*/, "", var)
        obj = s; sub(/^[^(]*\([ \t]*/, "", obj); sub(/[ \t]*,.*/, "", obj); gsub(/[ \t*]/, "", obj)
        prefix = s; sub(/^[^"]*"/, "", prefix); sub(/"$/, "", prefix)
        readerPrefix[var] = prefix; objectPrefix[obj] = prefix
        next
      }
      /\.checkUnknown\(/ {
        var = $0; sub(/\..*/, "", var)
        if (!(var in readerPrefix)) next
        s = $0
        while (match(s, /"[^"]*"/)) { add(readerPrefix[var], substr(s, RSTART + 1, RLENGTH - 2)); s = substr(s, RSTART + RLENGTH) }
        next
      }
      /^[A-Za-z_][A-Za-z_0-9]*\.[A-Za-z_][A-Za-z_0-9]*\(/ {
        var = $0; sub(/\..*/, "", var)
        if (!(var in readerPrefix)) next
        key = $0; sub(/^[^"]*"/, "", key); sub(/"$/, "", key)
        add(readerPrefix[var], key)
        next
      }
      {
        obj = $0; sub(/^[^(]*\([ \t]*/, "", obj); sub(/[ \t]*,.*/, "", obj); gsub(/[ \t*]/, "", obj)
        if (!(obj in objectPrefix)) next
        key = $0; sub(/^[^"]*"/, "", key); sub(/"$/, "", key)
        add(objectPrefix[obj], key)
      }'
}

key_count=0
check_keys() {   # SOURCE WHAT: every key SOURCE reads must appear as `key` in docs/configuration.md; sets key_count
  local source=$1 what=$2 keys key
  keys=$(extract_keys "$source")
  key_count=0
  if [ -z "$keys" ]; then
    fail "$source: no keys found (has the way it reads JSON changed? update extract_keys in scripts/check-docs.sh)"
    return
  fi
  while IFS= read -r key; do
    key_count=$((key_count + 1))
    grep -qF "\`$key\`" docs/configuration.md \
      || fail "docs/configuration.md: $what key \`$key\` (read by $source) is not documented"
  done <<< "$keys"
}
check_keys core/config.cpp "configuration"
config_keys=$key_count
check_keys core/sweeps/sweep.cpp "sweep file"
sweep_keys=$key_count

echo "check-docs: README.md $readme_lines lines (at most $max_readme_lines); $links_checked relative links in ${#md_files[@]} markdown files"
echo "check-docs: $config_keys configuration keys from core/config.cpp and $sweep_keys sweep keys from core/sweeps/sweep.cpp checked against docs/configuration.md"
if [ "${#problems[@]}" -gt 0 ]; then
  printf 'check-docs: FAILED: %s\n' "${problems[@]}" >&2
  exit 1
fi
echo "check-docs: ok"
