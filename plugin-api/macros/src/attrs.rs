//! Parsing: the arguments of `#[plugin(...)]`, `#[tool(...)]`, `#[extend(...)]` and
//! `#[arg(...)]`.
//!
//! Each parser checks what can be checked on its own (a JSON `meta` or `input_schema` is an
//! object, a name is not empty); checks across the whole plugin are in `expand`.

use plugin_manifest::{
    Annotations, ExtensionDecl, PermissionKind, Permissions, TaskSupport, ToolDecl, ToolsetDecl,
};
use serde_json::{Map, Value};
use syn::{
    Attribute, Expr, ExprLit, Lit, LitBool, LitInt, LitStr, meta::ParseNestedMeta, spanned::Spanned,
};

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
    /// `permissions(...)`: what the plugin needs of the system.
    pub(crate) permissions: Permissions,
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

impl ToolsetArgs {
    /// The toolset `name`, with nothing else said: served by default, not always.
    pub(crate) fn new(name: LitStr) -> Self {
        Self {
            name,
            title: None,
            description: None,
            instructions: None,
            default: true,
            always: false,
        }
    }

    /// The manifest's declaration of this toolset.
    pub(crate) fn decl(&self) -> ToolsetDecl {
        let text = |value: &Option<LitStr>| value.as_ref().map(LitStr::value).unwrap_or_default();
        ToolsetDecl {
            name: self.name.value(),
            title: text(&self.title),
            description: text(&self.description),
            instructions: text(&self.instructions),
            default: self.default,
            always: self.always,
        }
    }
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
            let mut toolset = ToolsetArgs::new(LitStr::new(
                "",
                meta.path
                    .get_ident()
                    .map_or_else(proc_macro2::Span::call_site, |i| i.span()),
            ));
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
            self.extends.push(ExtendArgs::from_nested(&meta)?);
        } else if meta.path.is_ident("permissions") {
            meta.parse_nested_meta(|inner| parse_permissions(&mut self.permissions, &inner))?;
        } else {
            return Err(meta.error(
                "unknown plugin field; expected name, version, description, toolset(...), extend(...), permissions(...), on_startup or on_toolset",
            ));
        }
        Ok(())
    }
}

/// One `KIND = ["...", ...]` of `permissions(...)`, each entry checked for its kind's form
/// (`plugin_manifest::PermissionKind::check`), an error pointing at the entry that is wrong.
fn parse_permissions(permissions: &mut Permissions, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    let kind = PermissionKind::from_name(&key(meta)).ok_or_else(|| {
        meta.error("unknown permission; expected read, write, connect, bind or env")
    })?;
    let list: syn::ExprArray = meta.value()?.parse()?;
    for element in &list.elems {
        let Expr::Lit(ExprLit {
            lit: Lit::Str(entry),
            ..
        }) = element
        else {
            return Err(syn::Error::new(
                element.span(),
                format!("each `{}` entry is a string literal", kind.name()),
            ));
        };
        kind.check(&entry.value())
            .map_err(|reason| syn::Error::new(entry.span(), reason))?;
        permissions.entries_mut(kind).push(entry.value());
    }
    Ok(())
}

/// What a tool, and an extension of one, may say about it: what a client reads.
#[derive(Default)]
pub(crate) struct Shown {
    pub(crate) title: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    /// The hints given.
    pub(crate) annotations: Annotations,
    pub(crate) meta: Option<Map<String, Value>>,
}

impl Shown {
    /// Parses the field `key` if it is one of these; whether it was.
    fn parse(&mut self, key: &str, meta: &ParseNestedMeta<'_>) -> syn::Result<bool> {
        if let Some(hint) = hint(&mut self.annotations, key) {
            *hint = Some(flag(meta)?);
        } else if key == "title" {
            self.title = Some(meta.value()?.parse()?);
        } else if key == "description" {
            self.description = Some(meta.value()?.parse()?);
        } else if key == "meta" {
            self.meta = Some(json_object(meta, "meta")?);
        } else {
            return Ok(false);
        }
        Ok(true)
    }

    /// The declaration of a tool called `name` in `toolset`, described by the description given
    /// or else by the doc comment among `attrs`.
    pub(crate) fn tool(&self, name: String, toolset: String, attrs: &[Attribute]) -> ToolDecl {
        ToolDecl {
            name,
            title: self.title.as_ref().map(LitStr::value),
            description: self
                .description
                .as_ref()
                .map_or_else(|| doc_comment(attrs), LitStr::value),
            toolset,
            annotations: self.annotations,
            meta: self.meta.clone(),
            input_schema: None,
            output_schema: None,
            task: TaskSupport::Forbidden,
            input_first: false,
        }
    }
}

/// The name of a nested field, `""` for a path that is not a single name.
pub(crate) fn key(meta: &ParseNestedMeta<'_>) -> String {
    meta.path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_default()
}

/// `#[tool(...)]`.
#[derive(Default)]
pub(crate) struct ToolArgs {
    pub(crate) name: Option<LitStr>,
    pub(crate) toolset: Option<LitStr>,
    pub(crate) shown: Shown,
    /// `inline`: a sync tool run on the thread that polls the call, not the blocking pool.
    pub(crate) inline: Option<proc_macro2::Span>,
    /// `input_schema`: the arguments' schema, served verbatim instead of the generated one.
    pub(crate) input_schema: Option<Map<String, Value>>,
    /// `task = "optional" | "required"`: whether a call may run as a task.
    pub(crate) task: TaskSupport,
    /// `input_first`: a task tool's call gathers its input before it becomes a task.
    pub(crate) input_first: Option<proc_macro2::Span>,
}

impl ToolArgs {
    pub(crate) fn from_attr(attr: &Attribute) -> syn::Result<Self> {
        let mut args = Self::default();
        if matches!(attr.meta, syn::Meta::Path(_)) {
            return Ok(args);
        }
        attr.parse_nested_meta(|meta| {
            let key = key(&meta);
            if args.shown.parse(&key, &meta)? {
                return Ok(());
            }
            if key == "name" {
                args.name = Some(non_empty(meta.value()?.parse()?)?);
            } else if key == "toolset" {
                args.toolset = Some(non_empty(meta.value()?.parse()?)?);
            } else if key == "inline" {
                if flag(&meta)? {
                    args.inline = Some(meta.path.span());
                }
            } else if key == "input_schema" {
                args.input_schema = Some(json_object(&meta, "input_schema")?);
            } else if key == "input_first" {
                if flag(&meta)? {
                    args.input_first = Some(meta.path.span());
                }
            } else if key == "task" {
                let value: LitStr = meta.value()?.parse()?;
                args.task = TaskSupport::parse(&value.value()).ok_or_else(|| {
                    syn::Error::new(
                        value.span(),
                        "`task` is \"optional\", \"required\" or \"forbidden\"",
                    )
                })?;
            } else {
                return Err(meta.error(
                    "unknown tool field; expected name, title, description, toolset, inline, meta, input_schema, task, input_first, read_only, destructive, idempotent or open_world",
                ));
            }
            Ok(())
        })?;
        Ok(args)
    }
}

/// `extend(...)` inside `#[plugin(...)]` (no code), or `#[extend(...)]` on a method (a wrap).
pub(crate) struct ExtendArgs {
    pub(crate) tool: LitStr,
    pub(crate) order: i32,
    pub(crate) shown: Shown,
    pub(crate) input_schema: Option<Map<String, Value>>,
}

impl ExtendArgs {
    /// Parses the fields of `extend(...)` nested in `#[plugin(...)]`.
    fn from_nested(meta: &ParseNestedMeta<'_>) -> syn::Result<Self> {
        let mut args = Self::empty(meta.path.span());
        meta.parse_nested_meta(|inner| args.field(inner))?;
        args.with_target(|| meta.error(NO_TARGET))
    }

    pub(crate) fn from_attr(attr: &Attribute) -> syn::Result<Self> {
        let mut args = Self::empty(attr.span());
        if !matches!(attr.meta, syn::Meta::Path(_)) {
            attr.parse_nested_meta(|meta| args.field(meta))?;
        }
        args.with_target(|| syn::Error::new_spanned(attr, NO_TARGET))
    }

    fn empty(span: proc_macro2::Span) -> Self {
        Self {
            tool: LitStr::new("", span),
            order: 0,
            shown: Shown::default(),
            input_schema: None,
        }
    }

    fn field(&mut self, meta: ParseNestedMeta<'_>) -> syn::Result<()> {
        let key = key(&meta);
        if self.shown.parse(&key, &meta)? {
            return Ok(());
        }
        if key == "tool" {
            self.tool = non_empty(meta.value()?.parse()?)?;
        } else if key == "order" {
            self.order = order(&meta)?;
        } else if key == "input_schema" {
            self.input_schema = Some(json_object(&meta, "input_schema")?);
        } else {
            return Err(meta.error(
                "unknown extension field; expected tool, order, title, description, meta, input_schema, read_only, destructive, idempotent or open_world",
            ));
        }
        Ok(())
    }

    /// Itself, or `missing()` when no `tool = "..."` was given.
    fn with_target(self, missing: impl FnOnce() -> syn::Error) -> syn::Result<Self> {
        if self.tool.value().is_empty() {
            Err(missing())
        } else {
            Ok(self)
        }
    }

    /// The manifest's declaration of this extension; `wrap` when a method's code wraps the tool.
    pub(crate) fn decl(&self, wrap: bool) -> ExtensionDecl {
        let shown = &self.shown;
        ExtensionDecl {
            tool: self.tool.value(),
            order: self.order,
            wrap,
            title: shown.title.as_ref().map(LitStr::value),
            description: shown.description.as_ref().map(LitStr::value),
            annotations: (!shown.annotations.is_empty()).then_some(shown.annotations),
            meta: shown.meta.clone(),
            input_schema: self.input_schema.clone(),
        }
    }
}

const NO_TARGET: &str = "an extension needs the tool it extends: `tool = \"...\"`";

/// `#[arg(...)]` on a tool parameter.
#[derive(Default)]
pub(crate) struct ArgArgs {
    pub(crate) default: Option<Expr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) rename: Option<LitStr>,
    /// The HTTP header the argument is mirrored into (`Mcp-Param-{header}`, SEP-2243).
    pub(crate) header: Option<LitStr>,
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
            } else if meta.path.is_ident("header") {
                into.header = Some(header_name(meta.value()?.parse()?)?);
            } else {
                return Err(meta.error(
                    "unknown argument field; expected default, description, rename or header",
                ));
            }
            Ok(())
        })
    }
}

/// A header name as SEP-2243 allows it: ASCII letters, digits and `-`, not empty.
fn header_name(name: LitStr) -> syn::Result<LitStr> {
    let value = name.value();
    if value.is_empty()
        || !value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return Err(syn::Error::new_spanned(
            &name,
            "a header name is ASCII letters, digits and `-` (it is sent as `Mcp-Param-{name}`)",
        ));
    }
    Ok(name)
}

/// The hint of `annotations` written `key` (`read_only`, `destructive`, ...), if it is one.
fn hint<'a>(annotations: &'a mut Annotations, key: &str) -> Option<&'a mut Option<bool>> {
    match key {
        "read_only" => Some(&mut annotations.read_only),
        "destructive" => Some(&mut annotations.destructive),
        "idempotent" => Some(&mut annotations.idempotent),
        "open_world" => Some(&mut annotations.open_world),
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
