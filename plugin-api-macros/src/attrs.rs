//! Parsing: the arguments of `#[plugin(...)]`, `#[tool(...)]`, `#[extend(...)]` and
//! `#[arg(...)]`.
//!
//! Each parser checks what can be checked on its own (a JSON `meta` or `input_schema` is an
//! object, a name is not empty); checks across the whole plugin are in `expand`.

use serde_json::{Map, Value};
use syn::{Attribute, Expr, ExprLit, Lit, LitBool, LitInt, LitStr, meta::ParseNestedMeta};

/// `#[plugin(...)]`.
#[derive(Default)]
pub(crate) struct PluginArgs {
    pub(crate) name: Option<LitStr>,
    pub(crate) version: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) toolsets: Vec<ToolsetArgs>,
    pub(crate) on_startup: bool,
    pub(crate) on_toolset: Vec<LitStr>,
    /// `extend(...)`: extensions without code, in order.
    pub(crate) extends: Vec<ExtendArgs>,
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
        } else if meta.path.is_ident("extend") {
            let mut fields = ExtendFields::default();
            meta.parse_nested_meta(|inner| fields.field(inner))?;
            self.extends.push(fields.finish(|| meta.error(NO_TARGET))?);
        } else {
            return Err(meta.error(
                "unknown plugin field; expected name, version, description, toolset(...), extend(...), on_startup or on_toolset",
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
                args.meta = Some(json_object(&meta, "meta")?);
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

const NO_TARGET: &str = "an extension needs the tool it extends: `tool = \"...\"`";

/// `extend(...)` inside `#[plugin(...)]` (no code), or `#[extend(...)]` on a method (a wrap).
pub(crate) struct ExtendArgs {
    pub(crate) tool: LitStr,
    pub(crate) order: i32,
    pub(crate) title: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    /// The hints given, by their MCP names; none given keeps the tool's annotations.
    pub(crate) annotations: Map<String, Value>,
    pub(crate) meta: Option<Map<String, Value>>,
    pub(crate) input_schema: Option<Map<String, Value>>,
}

impl ExtendArgs {
    pub(crate) fn from_attr(attr: &Attribute) -> syn::Result<Self> {
        let mut fields = ExtendFields::default();
        if !matches!(attr.meta, syn::Meta::Path(_)) {
            attr.parse_nested_meta(|meta| fields.field(meta))?;
        }
        fields.finish(|| syn::Error::new_spanned(attr, NO_TARGET))
    }

    /// The manifest's `ExtensionDecl`, as JSON.
    pub(crate) fn decl(&self, wrap: bool) -> Value {
        let mut decl = Map::new();
        decl.insert("tool".into(), self.tool.value().into());
        decl.insert("order".into(), self.order.into());
        decl.insert("wrap".into(), wrap.into());
        for (key, value) in [("title", &self.title), ("description", &self.description)] {
            if let Some(v) = value {
                decl.insert(key.into(), v.value().into());
            }
        }
        if !self.annotations.is_empty() {
            decl.insert(
                "annotations".into(),
                Value::Object(self.annotations.clone()),
            );
        }
        for (key, value) in [("meta", &self.meta), ("input_schema", &self.input_schema)] {
            if let Some(v) = value {
                decl.insert(key.into(), Value::Object(v.clone()));
            }
        }
        Value::Object(decl)
    }
}

/// The fields of an extension as they are parsed, before `tool` is known to be there.
#[derive(Default)]
struct ExtendFields {
    tool: Option<LitStr>,
    order: i32,
    title: Option<LitStr>,
    description: Option<LitStr>,
    annotations: Map<String, Value>,
    meta: Option<Map<String, Value>>,
    input_schema: Option<Map<String, Value>>,
}

impl ExtendFields {
    fn field(&mut self, meta: ParseNestedMeta<'_>) -> syn::Result<()> {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        if let Some(hint) = hint(&key) {
            self.annotations
                .insert(hint.to_owned(), Value::Bool(flag(&meta)?));
        } else if key == "tool" {
            self.tool = Some(non_empty(meta.value()?.parse()?)?);
        } else if key == "order" {
            self.order = order(&meta)?;
        } else if key == "title" {
            self.title = Some(meta.value()?.parse()?);
        } else if key == "description" {
            self.description = Some(meta.value()?.parse()?);
        } else if key == "meta" {
            self.meta = Some(json_object(&meta, "meta")?);
        } else if key == "input_schema" {
            self.input_schema = Some(json_object(&meta, "input_schema")?);
        } else {
            return Err(meta.error(
                "unknown extension field; expected tool, order, title, description, meta, input_schema, read_only, destructive, idempotent or open_world",
            ));
        }
        Ok(())
    }

    fn finish(self, missing_tool: impl FnOnce() -> syn::Error) -> syn::Result<ExtendArgs> {
        Ok(ExtendArgs {
            tool: self.tool.ok_or_else(missing_tool)?,
            order: self.order,
            title: self.title,
            description: self.description,
            annotations: self.annotations,
            meta: self.meta,
            input_schema: self.input_schema,
        })
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

/// The MCP name of an annotation hint written as `read_only`, `destructive`, ...
fn hint(key: &str) -> Option<&'static str> {
    match key {
        "read_only" => Some("readOnlyHint"),
        "destructive" => Some("destructiveHint"),
        "idempotent" => Some("idempotentHint"),
        "open_world" => Some("openWorldHint"),
        _ => None,
    }
}

/// `key = r#"{...}"#`: a string holding a JSON object.
fn json_object(meta: &ParseNestedMeta<'_>, key: &str) -> syn::Result<Map<String, Value>> {
    let text: LitStr = meta.value()?.parse()?;
    match serde_json::from_str(&text.value()) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(syn::Error::new(
            text.span(),
            format!("`{key}` must be a JSON object"),
        )),
        Err(e) => Err(syn::Error::new(
            text.span(),
            format!("`{key}` is not valid JSON: {e}"),
        )),
    }
}

/// `order = N`, where `N` may be negative and must fit an `i32`.
fn order(meta: &ParseNestedMeta<'_>) -> syn::Result<i32> {
    let input = meta.value()?;
    let negative = input.parse::<Option<syn::Token![-]>>()?.is_some();
    let lit: LitInt = input.parse()?;
    let n: i64 = lit.base10_parse()?;
    i32::try_from(if negative { -n } else { n })
        .map_err(|_| syn::Error::new(lit.span(), "`order` must fit an i32"))
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
