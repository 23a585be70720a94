//! Parsing: the arguments of `#[plugin(...)]`, `#[tool(...)]` and `#[arg(...)]`.
//!
//! Each parser checks what can be checked on its own (a JSON `meta` is an object, a name is not
//! empty); checks across the whole plugin are in `expand`.

use serde_json::{Map, Value};
use syn::{Attribute, Expr, ExprLit, Lit, LitBool, LitStr, meta::ParseNestedMeta};

/// `#[plugin(...)]`.
#[derive(Default)]
pub(crate) struct PluginArgs {
    pub(crate) name: Option<LitStr>,
    pub(crate) version: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) toolsets: Vec<ToolsetArgs>,
    pub(crate) on_startup: bool,
    pub(crate) on_toolset: Vec<LitStr>,
}

/// One `toolset(...)` inside `#[plugin(...)]`.
pub(crate) struct ToolsetArgs {
    pub(crate) name: LitStr,
    pub(crate) title: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) instructions: Option<LitStr>,
    pub(crate) default: bool,
    pub(crate) always: bool,
}

impl PluginArgs {
    pub(crate) fn parse(&mut self, meta: ParseNestedMeta<'_>) -> syn::Result<()> {
        if meta.path.is_ident("name") {
            self.name = Some(non_empty(meta.value()?.parse()?)?);
        } else if meta.path.is_ident("version") {
            self.version = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("description") {
            self.description = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("on_startup") {
            self.on_startup = true;
        } else if meta.path.is_ident("on_toolset") {
            self.on_toolset.push(non_empty(meta.value()?.parse()?)?);
        } else if meta.path.is_ident("toolset") {
            let mut name = None;
            let mut toolset = ToolsetArgs {
                name: LitStr::new(
                    "",
                    meta.path
                        .get_ident()
                        .map_or_else(proc_macro2::Span::call_site, |i| i.span()),
                ),
                title: None,
                description: None,
                instructions: None,
                default: true,
                always: false,
            };
            meta.parse_nested_meta(|inner| {
                if inner.path.is_ident("name") {
                    name = Some(non_empty(inner.value()?.parse()?)?);
                } else if inner.path.is_ident("title") {
                    toolset.title = Some(inner.value()?.parse()?);
                } else if inner.path.is_ident("description") {
                    toolset.description = Some(inner.value()?.parse()?);
                } else if inner.path.is_ident("instructions") {
                    toolset.instructions = Some(inner.value()?.parse()?);
                } else if inner.path.is_ident("default") {
                    toolset.default = flag(&inner)?;
                } else if inner.path.is_ident("always") {
                    toolset.always = flag(&inner)?;
                } else {
                    return Err(inner.error(
                        "unknown toolset field; expected name, title, description, instructions, default or always",
                    ));
                }
                Ok(())
            })?;
            toolset.name = name.ok_or_else(|| meta.error("a toolset needs a `name = \"...\"`"))?;
            self.toolsets.push(toolset);
        } else {
            return Err(meta.error(
                "unknown plugin field; expected name, version, description, toolset(...), on_startup or on_toolset",
            ));
        }
        Ok(())
    }
}

/// `#[tool(...)]`.
#[derive(Default)]
pub(crate) struct ToolArgs {
    pub(crate) name: Option<LitStr>,
    pub(crate) title: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) toolset: Option<LitStr>,
    pub(crate) annotations: Map<String, Value>,
    pub(crate) meta: Option<Map<String, Value>>,
}

impl ToolArgs {
    pub(crate) fn from_attr(attr: &Attribute) -> syn::Result<Self> {
        let mut args = Self::default();
        if matches!(attr.meta, syn::Meta::Path(_)) {
            return Ok(args);
        }
        attr.parse_nested_meta(|meta| {
            let hint = |key: &str| match key {
                "read_only" => Some("readOnlyHint"),
                "destructive" => Some("destructiveHint"),
                "idempotent" => Some("idempotentHint"),
                "open_world" => Some("openWorldHint"),
                _ => None,
            };
            let key = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
            if let Some(hint) = hint(&key) {
                args.annotations.insert(hint.to_owned(), Value::Bool(flag(&meta)?));
            } else if key == "name" {
                args.name = Some(non_empty(meta.value()?.parse()?)?);
            } else if key == "title" {
                args.title = Some(meta.value()?.parse()?);
            } else if key == "description" {
                args.description = Some(meta.value()?.parse()?);
            } else if key == "toolset" {
                args.toolset = Some(non_empty(meta.value()?.parse()?)?);
            } else if key == "meta" {
                let text: LitStr = meta.value()?.parse()?;
                match serde_json::from_str(&text.value()) {
                    Ok(Value::Object(map)) => args.meta = Some(map),
                    Ok(_) => return Err(syn::Error::new(text.span(), "`meta` must be a JSON object")),
                    Err(e) => return Err(syn::Error::new(text.span(), format!("`meta` is not valid JSON: {e}"))),
                }
            } else {
                return Err(meta.error(
                    "unknown tool field; expected name, title, description, toolset, meta, read_only, destructive, idempotent or open_world",
                ));
            }
            Ok(())
        })?;
        Ok(args)
    }
}

/// `#[arg(...)]` on a tool parameter.
#[derive(Default)]
pub(crate) struct ArgArgs {
    pub(crate) default: Option<Expr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) rename: Option<LitStr>,
}

impl ArgArgs {
    pub(crate) fn from_attr(attr: &Attribute, into: &mut Self) -> syn::Result<()> {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("default") {
                into.default = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("description") {
                into.description = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("rename") {
                into.rename = Some(non_empty(meta.value()?.parse()?)?);
            } else {
                return Err(
                    meta.error("unknown argument field; expected default, description or rename")
                );
            }
            Ok(())
        })
    }
}

/// `flag` or `flag = true|false`.
fn flag(meta: &ParseNestedMeta<'_>) -> syn::Result<bool> {
    if meta.input.peek(syn::Token![=]) {
        Ok(meta.value()?.parse::<LitBool>()?.value)
    } else {
        Ok(true)
    }
}

fn non_empty(lit: LitStr) -> syn::Result<LitStr> {
    if lit.value().trim().is_empty() {
        Err(syn::Error::new(lit.span(), "a name cannot be empty"))
    } else {
        Ok(lit)
    }
}

/// The text of `///` comments, lines joined, common indentation removed.
pub(crate) fn doc_comment(attrs: &[Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let text: Vec<&str> = lines
        .iter()
        .map(|l| {
            if l.len() >= indent {
                &l[indent..]
            } else {
                l.trim_start()
            }
        })
        .collect();
    text.join("\n").trim().to_owned()
}
