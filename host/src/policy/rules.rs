//! Allow and deny rules in CEL (the Common Expression Language, as agentgateway writes its MCP
//! rules), compiled once per policy load. The first rule whose condition is true decides; no
//! rule true, the policy's default does. A rule's condition sees:
//!
//! - `identity.name`, `identity.kind` (`key`, `oauth`, `relayed` or `anonymous`),
//!   `identity.scopes`;
//! - `jwt.sub` and `jwt.scopes` (an OAuth caller's; empty for others), and every other claim of
//!   an OAuth caller's token under its name (`jwt.email`, `jwt.groups`, `jwt.iss`; absent for
//!   other callers: test with `has(jwt.groups)`);
//! - `mcp.tool.name`, `mcp.tool.toolset`, `mcp.tool.plugin`, and
//!   `mcp.tool.annotations.read_only`, `.destructive`, `.idempotent`, `.open_world` (false when
//!   the tool does not say).
//!
//! A decision depends on the caller and the tool alone, so each is kept per policy load: a
//! listing or a call asks the map, not the interpreter, after the first time.

use std::{
    collections::HashMap,
    path::Path,
    sync::{Arc, RwLock},
};

use cel::{Context, Env, Program, Value};

use super::{
    Caller, ToolFacts,
    file::{Effect, Entry, PolicyFileError, RuleEntry},
};
use crate::util::lock::{read, write};

/// The variables a condition may name at its root.
const ROOTS: [&str; 3] = ["identity", "jwt", "mcp"];

/// How many decisions are kept before the map starts over.
const DECISIONS_KEPT: usize = 65_536;

/// One rule, compiled.
struct Rule {
    name: String,
    effect: Effect,
    program: Program,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule")
            .field("name", &self.name)
            .field("effect", &self.effect)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rules")
            .field("rules", &self.rules)
            .field("default_deny", &self.default_deny)
            .finish_non_exhaustive()
    }
}

/// The rules of a policy, and the decisions they made.
pub(crate) struct Rules {
    rules: Vec<Rule>,
    default_deny: bool,
    env: Arc<Env>,
    /// Decisions by caller and tool: the denying rule's name, or `None` for allowed.
    decisions: RwLock<HashMap<String, Option<Arc<str>>>>,
}

impl Rules {
    /// Compiles `entries` of the policy file at `path`: an error names the line and the rule.
    pub(crate) fn compile(
        path: &Path,
        entries: &[Entry<RuleEntry>],
        default_deny: bool,
    ) -> Result<Self, PolicyFileError> {
        let env = Arc::new(Env::stdlib());
        let rules = entries
            .iter()
            .map(|entry| {
                let invalid = |reason: String| {
                    PolicyFileError::invalid(
                        path,
                        entry.line,
                        format!("rule `{}`: {reason}", entry.name),
                    )
                };
                let program = env.compile(&entry.value.when).map_err(|error| {
                    // The parser's message goes on to draw the expression; its first line
                    // says what is wrong.
                    let error = error.to_string();
                    let first = error.lines().next().unwrap_or_default().trim();
                    invalid(format!("its condition is not CEL: {first}"))
                })?;
                if let Some(unknown) = program
                    .references()
                    .variables()
                    .into_iter()
                    .find(|v| !ROOTS.contains(v))
                {
                    return Err(invalid(format!(
                        "its condition names `{unknown}`; it may name {}",
                        ROOTS.join(", ")
                    )));
                }
                Ok(Rule {
                    name: entry.name.clone(),
                    effect: entry.value.effect,
                    program,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            rules,
            default_deny,
            env,
            decisions: RwLock::default(),
        })
    }

    /// How many rules it has.
    pub(crate) fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there are no rules and the default allows.
    pub(crate) fn allow_all(&self) -> bool {
        self.rules.is_empty() && !self.default_deny
    }

    /// The rule that denies `caller` `tool` (`[rules] default` when none matched), or `None`
    /// when it is allowed.
    pub(crate) fn denies(&self, caller: &Caller<'_>, tool: &ToolFacts<'_>) -> Option<Arc<str>> {
        if self.allow_all() {
            return None;
        }
        let key = decision_key(caller, tool);
        if let Some(decided) = read(&self.decisions).get(&key) {
            return decided.clone();
        }
        let decided = self.decide(caller, tool).map(Arc::from);
        let mut decisions = write(&self.decisions);
        if decisions.len() >= DECISIONS_KEPT {
            decisions.clear();
        }
        decisions.insert(key, decided.clone());
        decided
    }

    /// Runs the rules in order for `caller` and `tool`.
    fn decide(&self, caller: &Caller<'_>, tool: &ToolFacts<'_>) -> Option<String> {
        let mut context = Context::with_env(Arc::clone(&self.env));
        context.add_variable_from_value("identity", identity_value(caller));
        context.add_variable_from_value("jwt", jwt_value(caller));
        context.add_variable_from_value("mcp", mcp_value(tool));
        for rule in &self.rules {
            match rule.program.execute(&context) {
                Ok(Value::Bool(true)) => {
                    return (rule.effect == Effect::Deny).then(|| rule.name.clone());
                }
                Ok(Value::Bool(false)) => {}
                Ok(other) => tracing::warn!(
                    "policy rule `{}` gave {other:?}, not true or false, for tool `{}`: it does \
                     not match",
                    rule.name,
                    tool.name
                ),
                Err(error) => tracing::warn!(
                    "policy rule `{}` failed for tool `{}` and caller `{}`: {error}; it does not \
                     match",
                    rule.name,
                    tool.name,
                    caller.name
                ),
            }
        }
        self.default_deny.then(|| "[rules] default".to_owned())
    }
}

/// The key of a decision: everything of the caller and the tool a condition can read.
fn decision_key(caller: &Caller<'_>, tool: &ToolFacts<'_>) -> String {
    let a = tool.annotations;
    let bits = [a.read_only, a.destructive, a.idempotent, a.open_world]
        .map(|b| match b {
            Some(true) => '1',
            _ => '0',
        })
        .iter()
        .collect::<String>();
    format!(
        "{}\0{}\0{}\0{}\0{}\0{}\0{bits}\0{}",
        caller.key,
        caller.kind,
        caller.scopes.join(" "),
        tool.name,
        tool.toolset,
        tool.plugin,
        caller.claims.map_or("", |c| c.text.as_str())
    )
}

/// A CEL map of string keys.
fn map<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::from(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect::<HashMap<String, Value>>(),
    )
}

/// A CEL list of strings.
fn strings(values: &[String]) -> Value {
    Value::from(values.to_vec())
}

fn identity_value(caller: &Caller<'_>) -> Value {
    map([
        ("name", Value::from(caller.name)),
        ("kind", Value::from(caller.kind)),
        ("scopes", strings(caller.scopes)),
    ])
}

/// The token's claims, each under its name (a claim CEL cannot hold is left out), then `sub`
/// and `scopes` as the caller has them (empty strings and lists for a caller without a token).
fn jwt_value(caller: &Caller<'_>) -> Value {
    let oauth = caller.kind == "oauth";
    let mut claims: HashMap<String, Value> = caller
        .claims
        .into_iter()
        .flat_map(|c| &c.values)
        .filter_map(|(name, value)| Some((name.clone(), cel::to_value(value).ok()?)))
        .collect();
    claims.insert(
        "sub".to_owned(),
        Value::from(if oauth { caller.name } else { "" }),
    );
    claims.insert(
        "scopes".to_owned(),
        strings(if oauth { caller.scopes } else { &[] }),
    );
    Value::from(claims)
}

fn mcp_value(tool: &ToolFacts<'_>) -> Value {
    let a = tool.annotations;
    let flag = |b: Option<bool>| Value::Bool(b == Some(true));
    let annotations = map([
        ("read_only", flag(a.read_only)),
        ("destructive", flag(a.destructive)),
        ("idempotent", flag(a.idempotent)),
        ("open_world", flag(a.open_world)),
    ]);
    map([(
        "tool",
        map([
            ("name", Value::from(tool.name)),
            ("toolset", Value::from(tool.toolset)),
            ("plugin", Value::from(tool.plugin)),
            ("annotations", annotations),
        ]),
    )])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{
        file::PolicyFile,
        tests::{alice, bob, tool},
    };

    fn rules(text: &str) -> Result<Rules, String> {
        let path = Path::new("p.toml");
        let file = PolicyFile::parse(path, text).map_err(|e| e.to_string())?;
        Rules::compile(path, &file.rules, file.rules_default_deny).map_err(|e| e.to_string())
    }

    #[test]
    fn the_first_true_rule_decides() {
        let rules = rules(
            "[[rule]]\nname = \"alice reads\"\neffect = \"allow\"\nwhen = \"identity.name == \
             'alice' && mcp.tool.annotations.read_only\"\n\n[[rule]]\nname = \"no \
             writes\"\neffect = \"deny\"\nwhen = \"!mcp.tool.annotations.read_only || \
             mcp.tool.toolset == 'secret'\"\n",
        )
        .unwrap();
        let read = tool("read", "secret", true);
        let write = tool("write", "files", false);
        assert_eq!(rules.denies(&alice(), &read), None);
        assert_eq!(rules.denies(&bob(), &read).as_deref(), Some("no writes"));
        assert_eq!(rules.denies(&alice(), &write).as_deref(), Some("no writes"));
        assert_eq!(rules.denies(&bob(), &tool("x", "files", true)), None);
        assert_eq!(
            rules.denies(&bob(), &read).as_deref(),
            Some("no writes"),
            "kept"
        );
    }

    #[test]
    fn rules_read_any_claim_of_the_token() {
        let rules = rules(
            "[[rule]]\nname = \"admins only\"\neffect = \"deny\"\nwhen = \"mcp.tool.toolset == \
             'admin' && !(has(jwt.groups) && 'admins' in jwt.groups)\"\n",
        )
        .unwrap();
        let token = |groups: serde_json::Value| {
            let serde_json::Value::Object(values) = serde_json::json!({
                "sub": "carol", "email": "carol@example.com", "groups": groups
            }) else {
                unreachable!()
            };
            crate::auth::TokenClaims::new(values)
        };
        let (admin, staff) = (
            token(serde_json::json!(["admins"])),
            token(serde_json::json!(["staff"])),
        );
        let oauth = |key, claims| Caller {
            key,
            name: "carol",
            kind: "oauth",
            scopes: &[],
            claims: Some(claims),
        };
        let reset = tool("reset", "admin", false);
        assert_eq!(rules.denies(&oauth("oauth:carol", &admin), &reset), None);
        assert_eq!(
            rules
                .denies(&oauth("oauth:carol", &staff), &reset)
                .as_deref(),
            Some("admins only"),
            "the same subject with other claims is decided again"
        );
        assert_eq!(
            rules.denies(&alice(), &reset).as_deref(),
            Some("admins only"),
            "a key has no claims"
        );
        assert_eq!(rules.denies(&alice(), &tool("read", "files", true)), None);
    }

    #[test]
    fn the_default_decides_when_no_rule_matches() {
        let rules = rules(
            "[rules]\ndefault = \"deny\"\n[[rule]]\neffect = \"allow\"\nwhen = \"'admin' in \
             identity.scopes || jwt.sub == 'alice'\"\n",
        )
        .unwrap();
        assert_eq!(
            rules.denies(&alice(), &tool("t", "s", true)).as_deref(),
            Some("[rules] default")
        );
    }

    #[test]
    fn a_bad_condition_names_the_line_and_the_rule() {
        let error =
            rules("\n[[rule]]\nname = \"r\"\neffect = \"deny\"\nwhen = \"1 +\"\n").unwrap_err();
        assert!(
            error.starts_with("the policy file p.toml, line 2: rule `r`: its condition is not CEL"),
            "{error}"
        );
        let error =
            rules("[[rule]]\neffect = \"deny\"\nwhen = \"tool.name == 'x'\"\n").unwrap_err();
        assert!(
            error.contains("rule `rule[0]`: its condition names `tool`"),
            "{error}"
        );
    }
}
