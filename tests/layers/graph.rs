//! The import graph read from sources: modules, the paths each names (`use` trees expanded;
//! comments, strings and test modules left out), circles, layers and parts.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The paths a module names that lead to no module, each as `<module> uses crate::<path>`:
/// items of the crate root (`lib.rs`, which is no module of the graph).
pub(crate) fn uses_of_the_root(sources: &[(PathBuf, String)]) -> Vec<String> {
    let modules = Graph::of(sources).modules;
    let mut uses = Vec::new();
    for (path, text) in sources {
        let Some(module) = module_of(path).filter(|m| modules.contains(m)) else {
            continue;
        };
        let (kept, _) = without_tests(&blank_comments_and_strings(text));
        for named in imported_paths(&kept) {
            let Some(target) = absolute(&module, &named, &modules) else {
                continue;
            };
            if !target.is_empty() && longest_module(&target, &modules).is_none() {
                uses.push(format!("{module} uses crate::{}", target.join("::")));
            }
        }
    }
    uses
}

/// The lines (from 1) of `text` that open an inline test module or carry `#[path]`.
pub(crate) fn misplaced_tests(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let after_cfg_test = lines[..i]
            .iter()
            .rev()
            .take_while(|l| l.starts_with("#["))
            .any(|l| *l == "#[cfg(test)]");
        let inline_module = line.starts_with("mod ") && line.ends_with('{');
        if line.starts_with("#[path") || (inline_module && after_cfg_test) {
            found.push(i + 1);
        }
    }
    found
}

/// `(path under src/, text)` pairs as read from disk.
pub(crate) fn sources(files: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
    files
        .iter()
        .map(|(path, text)| (PathBuf::from(path), (*text).to_owned()))
        .collect()
}

/// Every `.rs` file under `dir`, by its path relative to `dir`.
pub(crate) fn read_sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("a source folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a readable source");
                out.push((
                    path.strip_prefix(dir).expect("under src").to_path_buf(),
                    text,
                ));
            }
        }
    }
    out.sort();
    out
}

pub(crate) fn describe(circles: &[Vec<String>]) -> String {
    circles
        .iter()
        .map(|c| c.join(" <-> "))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Modules and which modules each one imports.
#[derive(Debug, Default)]
pub(crate) struct Graph {
    pub(crate) modules: BTreeSet<String>,
    pub(crate) edges: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    pub(crate) fn of(sources: &[(PathBuf, String)]) -> Self {
        let mut code: BTreeMap<String, String> = BTreeMap::new();
        let mut test_modules = BTreeSet::new();
        for (path, text) in sources {
            let Some(module) = module_of(path) else {
                continue;
            };
            let (kept, tests) = without_tests(&blank_comments_and_strings(text));
            test_modules.extend(tests.into_iter().map(|t| join(&module, &t)));
            code.insert(module, kept);
        }
        code.retain(|module, _| {
            !test_modules
                .iter()
                .any(|t| module == t || module.starts_with(&format!("{t}::")))
        });
        let modules: BTreeSet<String> = code.keys().cloned().collect();
        let mut edges = BTreeMap::new();
        for (module, text) in &code {
            let targets: BTreeSet<String> = imported_paths(text)
                .into_iter()
                .filter_map(|path| absolute(module, &path, &modules))
                .filter_map(|path| longest_module(&path, &modules))
                .filter(|target| target != module)
                .collect();
            edges.insert(module.clone(), targets);
        }
        Self { modules, edges }
    }

    /// The graph of the top-level modules (a module's layer is its first name).
    pub(crate) fn layers(&self) -> Self {
        let layer = |m: &str| m.split("::").next().unwrap_or(m).to_owned();
        let mut layers = Self::default();
        for (from, targets) in &self.edges {
            let entry = layers.edges.entry(layer(from)).or_default();
            entry.extend(
                targets
                    .iter()
                    .map(|t| layer(t))
                    .filter(|t| *t != layer(from)),
            );
        }
        layers.modules = layers.edges.keys().cloned().collect();
        layers
    }

    /// The graph of the children of `parent` (a module's part is its first name below
    /// `parent`), without `parent` itself and without what lies outside it.
    pub(crate) fn parts_of(&self, parent: &str) -> Self {
        let prefix = format!("{parent}::");
        let part = |m: &str| {
            m.strip_prefix(&prefix)
                .map(|rest| rest.split("::").next().unwrap_or(rest).to_owned())
        };
        let mut parts = Self::default();
        for (from, targets) in &self.edges {
            let Some(from) = part(from) else {
                continue;
            };
            let entry = parts.edges.entry(from.clone()).or_default();
            entry.extend(
                targets
                    .iter()
                    .filter_map(|t| part(t))
                    .filter(|t| *t != from),
            );
        }
        parts.modules = parts.edges.keys().cloned().collect();
        parts
    }

    /// Each edge of this graph of `parent`'s parts that goes against `order` (a part may use
    /// only those before it), and each part `order` does not list, described.
    pub(crate) fn against_order(&self, parent: &str, order: &[&[&str]]) -> Vec<String> {
        let rank = |part: &str| order.iter().position(|l| l.contains(&part));
        let mut found = Vec::new();
        for (from, targets) in &self.edges {
            let Some(from_rank) = rank(from) else {
                found.push(format!("{parent}::{from} is not in the order: {order:?}"));
                continue;
            };
            for to in targets {
                if rank(to).is_none_or(|to_rank| to_rank >= from_rank) {
                    found.push(format!(
                        "{parent}::{from} uses {parent}::{to}, which comes after it: {order:?}"
                    ));
                }
            }
        }
        found
    }

    /// Panics unless each `(from, to)` is an edge: the graph reads what it should.
    pub(crate) fn assert_edges(&self, edges: &[(&str, &str)]) {
        for (from, to) in edges {
            assert!(
                self.edges[*from].contains(*to),
                "{from} -> {to}: {:?}",
                self.edges
            );
        }
    }

    /// The strongly connected components of two or more modules, each sorted.
    pub(crate) fn circles(&self) -> Vec<Vec<String>> {
        let mut tarjan = Tarjan {
            graph: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            next: 0,
            circles: Vec::new(),
        };
        for module in &self.modules {
            if !tarjan.index.contains_key(module.as_str()) {
                tarjan.visit(module);
            }
        }
        let mut circles = tarjan.circles;
        circles.sort();
        circles
    }
}

struct Tarjan<'a> {
    graph: &'a Graph,
    index: BTreeMap<&'a str, usize>,
    low: BTreeMap<&'a str, usize>,
    stack: Vec<&'a str>,
    on_stack: BTreeSet<&'a str>,
    next: usize,
    circles: Vec<Vec<String>>,
}

impl<'a> Tarjan<'a> {
    fn visit(&mut self, module: &'a str) {
        self.index.insert(module, self.next);
        self.low.insert(module, self.next);
        self.next += 1;
        self.stack.push(module);
        self.on_stack.insert(module);
        for target in self.graph.edges.get(module).into_iter().flatten() {
            let target = target.as_str();
            if !self.index.contains_key(target) {
                self.visit(target);
                let low = self.low[module].min(self.low[target]);
                self.low.insert(module, low);
            } else if self.on_stack.contains(target) {
                let low = self.low[module].min(self.index[target]);
                self.low.insert(module, low);
            }
        }
        if self.low[module] == self.index[module] {
            let mut component = Vec::new();
            while let Some(member) = self.stack.pop() {
                self.on_stack.remove(member);
                component.push(member.to_owned());
                if member == module {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                self.circles.push(component);
            }
        }
    }
}

/// `plan/phases/report/status.rs` → `plan::phases::report::status`, `plan/mod.rs` → `plan`; None for the crate roots.
pub(crate) fn module_of(path: &Path) -> Option<String> {
    let mut parts: Vec<String> = path
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        return None;
    }
    Some(parts.join("::"))
}

pub(crate) fn join(module: &str, child: &str) -> String {
    if module.is_empty() {
        child.to_owned()
    } else {
        format!("{module}::{child}")
    }
}

/// `text` with comments, string and character literals blanked out (lines kept).
pub(crate) fn blank_comments_and_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let peek = |i: usize, n: usize| chars.get(i + n).copied();
        match chars[i] {
            '/' if peek(i, 1) == Some('/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if peek(i, 1) == Some('*') => {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '/' && peek(i, 1) == Some('*') {
                        depth += 1;
                        i += 2;
                    } else if chars[i] == '*' && peek(i, 1) == Some('/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        out.push(blank(chars[i]));
                        i += 1;
                    }
                }
            }
            'r' if matches!(peek(i, 1), Some('"' | '#'))
                && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')) =>
            {
                let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
                if peek(i, 1 + hashes) != Some('"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                i += 2 + hashes;
                while i < chars.len() {
                    let closes =
                        chars[i] == '"' && (1..=hashes).all(|n| chars.get(i + n) == Some(&'#'));
                    if closes {
                        i += 1 + hashes;
                        break;
                    }
                    out.push(blank(chars[i]));
                    i += 1;
                }
                out.push_str("\"\"");
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    if let Some(&c) = chars.get(i) {
                        out.push(blank(c));
                    }
                    i += 1;
                }
                i += 1;
                out.push_str("\"\"");
            }
            // A character literal ('x', '\n', '\''), not a lifetime ('a).
            '\'' if peek(i, 1) == Some('\\') => {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            }
            '\'' if peek(i, 2) == Some('\'') => {
                i += 3;
                out.push_str("' '");
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// `code` without its `#[cfg(test)]` items, and the names of the test modules it declares
/// in files of their own (`#[cfg(test)] mod name;`).
pub(crate) fn without_tests(code: &str) -> (String, Vec<String>) {
    const MARK: &str = "#[cfg(test)]";
    let mut kept = String::new();
    let mut test_modules = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(MARK) {
        kept.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        let end = item_end(item);
        let words: Vec<&str> = item[..end]
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        if item[..end].trim_end().ends_with(';') {
            if let Some(name) = words
                .iter()
                .position(|w| *w == "mod")
                .and_then(|i| words.get(i + 1))
            {
                test_modules.push((*name).to_owned());
            }
        }
        kept.extend(item[..end].chars().filter(|c| *c == '\n'));
        rest = &item[end..];
    }
    kept.push_str(rest);
    (kept, test_modules)
}

/// Where the item at the start of `code` ends: after its first `;` outside brackets, or after
/// the `}` closing its first `{`.
pub(crate) fn item_end(code: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in code.char_indices() {
        match c {
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 && c == '}' {
                    return i + 1;
                }
            }
            ';' if depth == 0 => return i + 1,
            _ => {}
        }
    }
    code.len()
}

/// Every path `code` names that starts with `crate`, `super` or `self`, or with a word a
/// `use` names first (a child module: `use child::x`), as its segments; `use` trees expanded.
pub(crate) fn imported_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = code.to_owned();
    // The `use` items first, each replaced by blanks so its words are not read twice.
    let mut search = 0;
    while let Some(found) = find_word(&rest[search..], "use") {
        let start = search + found;
        let Some(length) = rest[start..].find(';') else {
            break;
        };
        let tree = rest[start + 3..start + length].to_owned();
        let tree = tokens(&tree);
        let mut at = 0;
        while at < tree.len() {
            use_tree(&[], &tree, &mut at, &mut paths);
        }
        rest.replace_range(start..start + length, &" ".repeat(length));
        search = start + length;
    }
    // Then paths in code: `crate::a::b(...)`, `super::c::D`; a visibility (`pub(in crate::a)`)
    // imports nothing.
    let tokens = tokens(&rest);
    let mut i = 0;
    while i < tokens.len() {
        if matches!(tokens[i].as_str(), "crate" | "super" | "self")
            && tokens.get(i + 1).map(String::as_str) == Some("::")
            && (i == 0 || tokens[i - 1] != "::")
            && !(i >= 2 && tokens[i - 1] == "in" && tokens[i - 2] == "(")
        {
            let mut path = vec![tokens[i].clone()];
            let mut j = i + 1;
            while tokens.get(j).map(String::as_str) == Some("::")
                && tokens.get(j + 1).is_some_and(|t| is_word(t))
            {
                path.push(tokens[j + 1].clone());
                j += 2;
            }
            paths.push(path);
            i = j;
        } else {
            i += 1;
        }
    }
    paths
}

/// Expands the use tree at `tokens[*at..]` under `prefix` into `out`.
pub(crate) fn use_tree(
    prefix: &[String],
    tokens: &[String],
    at: &mut usize,
    out: &mut Vec<Vec<String>>,
) {
    let token = |at: usize| tokens.get(at).map(String::as_str);
    let mut path = prefix.to_vec();
    loop {
        match token(*at) {
            Some("{") => {
                *at += 1;
                while let Some(next) = token(*at) {
                    if next == "}" {
                        *at += 1;
                        break;
                    }
                    use_tree(&path, tokens, at, out);
                    if token(*at) == Some(",") {
                        *at += 1;
                    }
                }
                return;
            }
            Some("::") => *at += 1,
            Some("*") => {
                *at += 1;
                out.push(path);
                return;
            }
            Some(word) if is_word(word) => {
                // `a::{self}` names `a` itself.
                if word != "self" || path.is_empty() {
                    path.push(word.to_owned());
                }
                *at += 1;
                if token(*at) == Some("::") {
                    continue;
                }
                if token(*at) == Some("as") {
                    *at += 2;
                }
                out.push(path);
                return;
            }
            _ => {
                *at += 1;
                return;
            }
        }
    }
}

/// Words, `::` and single punctuation characters.
pub(crate) fn tokens(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".to_owned());
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
            i += 1;
        }
    }
    out
}

pub(crate) fn is_word(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Where `word` first stands alone in `text`.
pub(crate) fn find_word(text: &str, word: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut from = 0;
    while let Some(found) = text[from..].find(word) {
        let at = from + found;
        let before = at == 0 || !is_ident(bytes[at - 1]);
        let after = bytes.get(at + word.len()).is_none_or(|b| !is_ident(*b));
        if before && after {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// `path` as named from `module`, made absolute (None for paths outside the crate).
pub(crate) fn absolute(
    module: &str,
    path: &[String],
    modules: &BTreeSet<String>,
) -> Option<Vec<String>> {
    let mut base: Vec<String> = module.split("::").map(str::to_owned).collect();
    let mut segments = path.iter().peekable();
    match segments.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segments.next();
            base.clear();
        }
        Some("super") => {
            while segments.peek().map(|s| s.as_str()) == Some("super") {
                segments.next();
                base.pop();
            }
        }
        Some("self") => {
            segments.next();
        }
        // A child module named first (`use child::x` in a folder's `mod.rs`).
        Some(first) if modules.contains(&join(module, first)) => {}
        _ => return None,
    }
    base.extend(segments.cloned());
    Some(base)
}

/// The longest module `path` starts with.
pub(crate) fn longest_module(path: &[String], modules: &BTreeSet<String>) -> Option<String> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].join("::"))
        .find(|candidate| modules.contains(candidate))
}
