//! `#[resource]`, `#[resource_template]`, `#[prompt]` and `#[complete]` methods: their
//! declarations for the manifest, the checks across them, and the code that registers them in
//! the plugin's `contributions()`.
//!
//! Each method becomes a `plugin_api::__private::Code` closure that reads its parameters from the
//! request (template variables, prompt arguments, or the value to complete), calls the method
//! (awaiting it when it is `async`, turning an `Err` into a `ToolError`) and answers with its
//! value. Mistakes are compile errors: a URI, template or prompt declared twice, a toolset the
//! plugin does not declare, a template the host could not match, parameters that are not the
//! template's variables, a completion of an argument that does not exist.

use std::collections::HashSet;

use plugin_manifest::{
    CompletionDecl, CompletionRef, Manifest, PromptArgumentDecl, PromptDecl, ResourceDecl,
    ResourceTemplateDecl, uri_template::UriTemplate,
};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use serde::Serialize;
use syn::{
    FnArg, Ident, ImplItemFn, LitInt, LitStr, Pat, PatType, Type, meta::ParseNestedMeta,
    spanned::Spanned,
};

use crate::{
    attrs::{ArgArgs, doc_comment, key},
    handler::{context_arg, context_param, method_call, returns_result, to_json},
};

/// One of the four attributes: what it registers, and how.
struct Kind {
    /// The attribute.
    name: &'static str,
    /// The `plugin_api::__private::ContributionHandlers` method registering what it declares.
    register: &'static str,
    /// What it declares, in messages.
    what: &'static str,
    /// The request its code receives (a type of `plugin_api::__private`).
    request: &'static str,
    /// The fields the attribute takes.
    fields: &'static [&'static str],
}

const RESOURCE: Kind = Kind {
    name: "resource",
    register: "resource",
    what: "resource",
    request: "ResourceRequest",
    fields: &[
        "uri",
        "name",
        "title",
        "description",
        "mime_type",
        "toolset",
        "size",
    ],
};

const TEMPLATE: Kind = Kind {
    name: "resource_template",
    register: "resource_template",
    what: "resource template",
    request: "ResourceRequest",
    fields: &[
        "uri_template",
        "name",
        "title",
        "description",
        "mime_type",
        "toolset",
    ],
};

const PROMPT: Kind = Kind {
    name: "prompt",
    register: "prompt",
    what: "prompt",
    request: "PromptRequest",
    fields: &["name", "title", "description", "toolset"],
};

const COMPLETION: Kind = Kind {
    name: "complete",
    register: "completion",
    what: "completion",
    request: "CompletionRequest",
    fields: &["prompt", "resource", "argument"],
};

/// The method attributes this module handles.
pub(crate) const ATTRIBUTES: [&str; 4] =
    [RESOURCE.name, TEMPLATE.name, PROMPT.name, COMPLETION.name];

/// One parsed method: its declaration, what must be unique about it, and the statement that
/// registers it.
struct Parsed<D> {
    decl: D,
    /// Its URI, template, name, or prompt and argument, quoted for messages.
    key: String,
    span: Span,
    tokens: TokenStream,
}

impl Kind {
    /// `decl`, registered by code that reads its parameters (`lets`) and calls the method;
    /// an error if `list` already has one with this `key`.
    fn parsed<D: Serialize>(
        &self,
        list: &[Parsed<D>],
        key: String,
        decl: D,
        span: Span,
        shape: &Shape,
        lets: Vec<TokenStream>,
    ) -> syn::Result<Parsed<D>> {
        if list.iter().any(|p| p.key == key) {
            return Err(syn::Error::new(
                span,
                format!("{} {key} is declared twice", self.what),
            ));
        }
        let tokens = shape.register(self, &decl, lets);
        Ok(Parsed {
            decl,
            key,
            span,
            tokens,
        })
    }
}

/// Every contribution method of a plugin, in declaration order per kind.
#[derive(Default)]
pub(crate) struct ContributionMethods {
    resources: Vec<Parsed<ResourceDecl>>,
    templates: Vec<Parsed<ResourceTemplateDecl>>,
    prompts: Vec<Parsed<PromptDecl>>,
    completions: Vec<Parsed<CompletionDecl>>,
    /// The variables of each template, and the arguments of each prompt: what a completion may
    /// refer to.
    completable: Vec<(CompletionRef, Vec<String>)>,
}

impl ContributionMethods {
    /// Parses `method` if it carries one of [`ATTRIBUTES`] (and removes the attribute);
    /// whether it did. What names no toolset goes in `own_toolset`; what names one must name one
    /// of `toolsets`.
    pub(crate) fn take(
        &mut self,
        own_toolset: &str,
        toolsets: &HashSet<String>,
        method: &mut ImplItemFn,
    ) -> syn::Result<bool> {
        let Some(pos) = method
            .attrs
            .iter()
            .position(|a| ATTRIBUTES.iter().any(|n| a.path().is_ident(n)))
        else {
            return Ok(false);
        };
        let attr = method.attrs.remove(pos);
        let kind = [&RESOURCE, &TEMPLATE, &PROMPT, &COMPLETION]
            .into_iter()
            .find(|k| attr.path().is_ident(k.name))
            .unwrap_or(&COMPLETION);
        let mut fields = Fields::default();
        if !matches!(attr.meta, syn::Meta::Path(_)) {
            attr.parse_nested_meta(|meta| fields.parse(&meta))?;
        }
        fields.only(kind.fields)?;
        let shape = Shape::of(method)?;
        if kind.name == COMPLETION.name {
            self.completion(&fields, method, &shape)?;
            return Ok(true);
        }
        let named = fields.named(kind, own_toolset, toolsets, method)?;
        match kind.name {
            "resource" => self.resource(named, &fields, method, &shape),
            "resource_template" => self.template(named, &fields, method, &shape),
            _ => self.prompt(named, method, &shape),
        }?;
        Ok(true)
    }

    fn resource(
        &mut self,
        named: Named,
        fields: &Fields,
        method: &ImplItemFn,
        shape: &Shape,
    ) -> syn::Result<()> {
        let uri = fields.required("uri", method)?;
        if let Some(param) = shape.params.first() {
            return Err(syn::Error::new(
                param.span,
                "a #[resource] method takes no arguments (a #[resource_template] reads them from the URI)",
            ));
        }
        let size = fields.size.as_ref().map(LitInt::base10_parse).transpose()?;
        let decl = named.resource(uri.value(), size);
        let key = format!("`{}`", uri.value());
        let parsed = RESOURCE.parsed(&self.resources, key, decl, uri.span(), shape, Vec::new())?;
        self.resources.push(parsed);
        Ok(())
    }

    fn template(
        &mut self,
        named: Named,
        fields: &Fields,
        method: &ImplItemFn,
        shape: &Shape,
    ) -> syn::Result<()> {
        let text = fields.required("uri_template", method)?;
        let template = UriTemplate::parse(&text.value())
            .map_err(|e| syn::Error::new(text.span(), e.to_string()))?;
        let variables: Vec<String> = template.variables().map(str::to_owned).collect();
        let params: Vec<String> = shape.params.iter().map(|p| p.name.clone()).collect();
        if sorted(&variables) != sorted(&params) {
            return Err(syn::Error::new(
                method.sig.paren_token.span.join(),
                format!(
                    "the parameters of a #[resource_template] method are its template's variables: \
                     expected {}, found {}",
                    names(&variables),
                    names(&params)
                ),
            ));
        }
        let lets = shape
            .params
            .iter()
            .map(|p| p.read(quote!(variable)))
            .collect();
        let decl = named.template(text.value());
        self.completable
            .push((CompletionRef::Resource { uri: text.value() }, variables));
        let key = format!("`{}`", text.value());
        let parsed = TEMPLATE.parsed(&self.templates, key, decl, text.span(), shape, lets)?;
        self.templates.push(parsed);
        Ok(())
    }

    fn prompt(&mut self, named: Named, method: &ImplItemFn, shape: &Shape) -> syn::Result<()> {
        let arguments = shape
            .params
            .iter()
            .map(|p| PromptArgumentDecl {
                name: p.name.clone(),
                description: p.description.clone(),
                required: p.optional.is_none(),
            })
            .collect();
        let decl = named.prompt(arguments);
        let lets = shape
            .params
            .iter()
            .map(|p| {
                if p.optional.is_some() {
                    p.read(quote!(optional))
                } else {
                    p.read(quote!(required))
                }
            })
            .collect();
        self.completable.push((
            CompletionRef::Prompt {
                name: decl.name.clone(),
            },
            shape.params.iter().map(|p| p.name.clone()).collect(),
        ));
        let key = format!("`{}`", decl.name);
        let span = method.sig.ident.span();
        let parsed = PROMPT.parsed(&self.prompts, key, decl, span, shape, lets)?;
        self.prompts.push(parsed);
        Ok(())
    }

    fn completion(
        &mut self,
        fields: &Fields,
        method: &ImplItemFn,
        shape: &Shape,
    ) -> syn::Result<()> {
        let argument = fields.required("argument", method)?;
        let reference = match (&fields.prompt, &fields.resource) {
            (Some(name), None) => CompletionRef::Prompt { name: name.value() },
            (None, Some(uri)) => CompletionRef::Resource { uri: uri.value() },
            _ => {
                return Err(syn::Error::new(
                    method.sig.span(),
                    "#[complete] needs one of `prompt = \"name\"` or `resource = \"uri template\"`, and `argument = \"...\"`",
                ));
            }
        };
        let mut inputs = shape.params.iter();
        let value = inputs.next().filter(|p| p.optional.is_none());
        let context = inputs.next();
        let (Some(value), None) = (value, inputs.next()) else {
            return Err(syn::Error::new(
                method.sig.span(),
                "a #[complete] method is `fn(&self, value: String) -> Vec<String>`, optionally with \
                 a second parameter `arguments: HashMap<String, String>` (the arguments already given)",
            ));
        };
        let ident = &value.ident;
        let mut lets = vec![quote!(let #ident = ::core::clone::Clone::clone(&request.value);)];
        if let Some(context) = context {
            let ident = &context.ident;
            lets.push(quote!(let #ident = ::core::clone::Clone::clone(&request.arguments);));
        }
        let key = format!("of {reference} argument `{}`", argument.value());
        let decl = CompletionDecl {
            reference,
            argument: argument.value(),
        };
        let span = argument.span();
        let parsed = COMPLETION.parsed(&self.completions, key, decl, span, shape, lets)?;
        self.completions.push(parsed);
        Ok(())
    }

    /// Checks what needs the whole plugin: completions refer to a prompt argument or template
    /// variable of this plugin.
    pub(crate) fn check(&self) -> syn::Result<()> {
        for c in &self.completions {
            let CompletionDecl {
                reference,
                argument,
            } = &c.decl;
            let Some((_, arguments)) = self.completable.iter().find(|(r, _)| r == reference) else {
                return Err(syn::Error::new(
                    c.span,
                    format!(
                        "#[complete] refers to {reference}, which this plugin does not declare"
                    ),
                ));
            };
            if !arguments.contains(argument) {
                return Err(syn::Error::new(
                    c.span,
                    format!(
                        "{reference} has no argument `{argument}` (it has {})",
                        names(arguments)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Fills the manifest's resources, resource templates, prompts and completions.
    pub(crate) fn manifest(&self, manifest: &mut Manifest) {
        manifest.resources = decls(&self.resources);
        manifest.resource_templates = decls(&self.templates);
        manifest.prompts = decls(&self.prompts);
        manifest.completions = decls(&self.completions);
    }

    /// The `contributions()` of `PluginDefinition`, if the plugin has any.
    pub(crate) fn definition(&self) -> Option<TokenStream> {
        let all: Vec<&TokenStream> = self
            .resources
            .iter()
            .map(|p| &p.tokens)
            .chain(self.templates.iter().map(|p| &p.tokens))
            .chain(self.prompts.iter().map(|p| &p.tokens))
            .chain(self.completions.iter().map(|p| &p.tokens))
            .collect();
        (!all.is_empty()).then(|| {
            quote! {
                fn contributions(
                    self: &::std::sync::Arc<Self>,
                ) -> ::plugin_api::__private::ContributionHandlers {
                    let mut contributions = ::plugin_api::__private::ContributionHandlers::default();
                    #(#all)*
                    contributions
                }
            }
        })
    }
}

/// The declarations of `parsed`, in order.
fn decls<D: Clone>(parsed: &[Parsed<D>]) -> Vec<D> {
    parsed.iter().map(|p| p.decl.clone()).collect()
}

fn sorted(names: &[String]) -> Vec<&str> {
    let mut names: Vec<&str> = names.iter().map(String::as_str).collect();
    names.sort_unstable();
    names
}

fn names(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The fields any of the four attributes may give.
#[derive(Default)]
struct Fields {
    given: Vec<(String, Span)>,
    uri: Option<LitStr>,
    uri_template: Option<LitStr>,
    name: Option<LitStr>,
    title: Option<LitStr>,
    description: Option<LitStr>,
    mime_type: Option<LitStr>,
    toolset: Option<LitStr>,
    size: Option<LitInt>,
    prompt: Option<LitStr>,
    resource: Option<LitStr>,
    argument: Option<LitStr>,
}

impl Fields {
    fn parse(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        let key = key(meta);
        let slot = match key.as_str() {
            "uri" => &mut self.uri,
            "uri_template" => &mut self.uri_template,
            "name" => &mut self.name,
            "title" => &mut self.title,
            "description" => &mut self.description,
            "mime_type" => &mut self.mime_type,
            "toolset" => &mut self.toolset,
            "prompt" => &mut self.prompt,
            "resource" => &mut self.resource,
            "argument" => &mut self.argument,
            "size" => {
                self.size = Some(meta.value()?.parse()?);
                self.given.push((key, meta.path.span()));
                return Ok(());
            }
            _ => return Err(meta.error(format!("unknown field `{key}`"))),
        };
        let value: LitStr = meta.value()?.parse()?;
        if value.value().trim().is_empty() && key != "description" {
            return Err(syn::Error::new(
                value.span(),
                format!("`{key}` cannot be empty"),
            ));
        }
        *slot = Some(value);
        self.given.push((key, meta.path.span()));
        Ok(())
    }

    /// An error for a field the attribute does not take.
    fn only(&self, allowed: &[&str]) -> syn::Result<()> {
        match self
            .given
            .iter()
            .find(|(k, _)| !allowed.contains(&k.as_str()))
        {
            Some((key, span)) => Err(syn::Error::new(
                *span,
                format!("unknown field `{key}`; expected {}", allowed.join(", ")),
            )),
            None => Ok(()),
        }
    }

    fn required(&self, key: &str, method: &ImplItemFn) -> syn::Result<LitStr> {
        let value = match key {
            "uri" => &self.uri,
            "uri_template" => &self.uri_template,
            _ => &self.argument,
        };
        value.clone().ok_or_else(|| {
            syn::Error::new(method.sig.span(), format!("`{key} = \"...\"` is required"))
        })
    }

    /// What a resource, a resource template or a prompt (`kind`) is called and says of itself;
    /// an error at its `toolset` if that is not one of `toolsets`.
    fn named(
        &self,
        kind: &Kind,
        own_toolset: &str,
        toolsets: &HashSet<String>,
        method: &ImplItemFn,
    ) -> syn::Result<Named> {
        let name = self
            .name
            .as_ref()
            .map_or_else(|| method.sig.ident.to_string(), LitStr::value);
        if let Some(toolset) = self
            .toolset
            .as_ref()
            .filter(|t| !toolsets.contains(&t.value()))
        {
            return Err(syn::Error::new(
                toolset.span(),
                format!(
                    "{} `{name}` is in toolset `{}`, which this plugin does not declare",
                    kind.what,
                    toolset.value()
                ),
            ));
        }
        Ok(Named {
            name,
            title: self.title.as_ref().map(LitStr::value),
            description: self
                .description
                .as_ref()
                .map_or_else(|| doc_comment(&method.attrs), LitStr::value),
            mime_type: self.mime_type.as_ref().map(LitStr::value),
            toolset: self
                .toolset
                .as_ref()
                .map_or_else(|| own_toolset.to_owned(), LitStr::value),
        })
    }
}

/// The fields a resource, a resource template and a prompt share: `name` (default: the
/// method's), `title`, `description` (default: the doc comment), `mime_type` (not for a
/// prompt) and `toolset` (default: the plugin's own).
struct Named {
    name: String,
    title: Option<String>,
    description: String,
    mime_type: Option<String>,
    toolset: String,
}

impl Named {
    /// The declaration of the static resource at `uri`.
    fn resource(self, uri: String, size: Option<u64>) -> ResourceDecl {
        ResourceDecl {
            uri,
            name: self.name,
            title: self.title,
            description: self.description,
            mime_type: self.mime_type,
            toolset: self.toolset,
            size,
        }
    }

    /// The declaration of the resource template `uri_template`.
    fn template(self, uri_template: String) -> ResourceTemplateDecl {
        ResourceTemplateDecl {
            uri_template,
            name: self.name,
            title: self.title,
            description: self.description,
            mime_type: self.mime_type,
            toolset: self.toolset,
        }
    }

    /// The declaration of a prompt taking `arguments` (a prompt has no MIME type).
    fn prompt(self, arguments: Vec<PromptArgumentDecl>) -> PromptDecl {
        PromptDecl {
            name: self.name,
            title: self.title,
            description: self.description,
            toolset: self.toolset,
            arguments,
        }
    }
}

/// A method's signature, as the four attributes read it.
struct Shape {
    fn_name: Ident,
    has_self: bool,
    is_async: bool,
    is_result: bool,
    params: Vec<Param>,
    /// What the method is called with, in order: its parameters, and the request's context
    /// where it takes one (`ctx: Context` or `ctx: &Context`).
    call_args: Vec<TokenStream>,
    takes_context: bool,
}

/// One parameter: its name outside (after `#[arg(rename)]`), its binding and type, and
/// whether it is an `Option` (of what).
struct Param {
    name: String,
    ident: Ident,
    ty: Type,
    optional: Option<Type>,
    description: String,
    span: Span,
}

impl Param {
    /// Reads the parameter `ident`, removing its `#[arg]` and doc attributes.
    fn of(ident: Ident, typed: &mut PatType) -> syn::Result<Self> {
        let mut arg = ArgArgs::default();
        for attr in typed.attrs.iter().filter(|a| a.path().is_ident("arg")) {
            ArgArgs::from_attr(attr, &mut arg)?;
        }
        if let Some(default) = &arg.default {
            return Err(syn::Error::new(
                default.span(),
                "`default` is for tool arguments; use an `Option` parameter",
            ));
        }
        let description = arg
            .description
            .map_or_else(|| doc_comment(&typed.attrs), |d| d.value());
        typed
            .attrs
            .retain(|a| !a.path().is_ident("arg") && !a.path().is_ident("doc"));
        Ok(Param {
            name: arg.rename.map_or_else(|| ident.to_string(), |r| r.value()),
            ident,
            optional: option_of(&typed.ty),
            ty: (*typed.ty).clone(),
            description,
            span: typed.span(),
        })
    }

    /// `let ident: Ty = request.METHOD("name")?;`
    fn read(&self, method: TokenStream) -> TokenStream {
        let (ident, name) = (&self.ident, &self.name);
        let ty = self.optional.as_ref().unwrap_or(&self.ty);
        let ty = if self.optional.is_some() {
            quote!(::core::option::Option<#ty>)
        } else {
            quote!(#ty)
        };
        quote!(let #ident: #ty = request.#method(#name)?;)
    }
}

impl Shape {
    /// Reads `method`'s signature, removing the `#[arg]` and doc attributes of its parameters.
    fn of(method: &mut ImplItemFn) -> syn::Result<Self> {
        let sig = &mut method.sig;
        if !sig.generics.params.is_empty() {
            return Err(syn::Error::new(
                sig.generics.span(),
                "this method cannot be generic",
            ));
        }
        let mut shape = Shape {
            fn_name: sig.ident.clone(),
            has_self: false,
            is_async: sig.asyncness.is_some(),
            is_result: returns_result(&sig.output),
            params: Vec::new(),
            call_args: Vec::new(),
            takes_context: false,
        };
        for input in &mut sig.inputs {
            match input {
                FnArg::Receiver(r) if r.reference.is_some() && r.mutability.is_none() => {
                    shape.has_self = true;
                }
                FnArg::Receiver(r) => {
                    return Err(syn::Error::new(
                        r.span(),
                        "this method takes `&self` (calls run concurrently)",
                    ));
                }
                FnArg::Typed(typed) => shape.param(typed)?,
            }
        }
        Ok(shape)
    }

    /// Reads one typed parameter: the request's context, or a [`Param`] the request provides.
    fn param(&mut self, typed: &mut PatType) -> syn::Result<()> {
        let Pat::Ident(pat) = &*typed.pat else {
            return Err(syn::Error::new(
                typed.pat.span(),
                "parameters must be plain names",
            ));
        };
        if let Some(by_ref) = context_param(&typed.ty) {
            if self.takes_context {
                return Err(syn::Error::new(
                    typed.span(),
                    "a method takes at most one `Context` parameter",
                ));
            }
            self.takes_context = true;
            self.call_args.push(context_arg(by_ref));
            return Ok(());
        }
        let param = Param::of(pat.ident.clone(), typed)?;
        let ident = &param.ident;
        self.call_args.push(quote!(#ident));
        self.params.push(param);
        Ok(())
    }

    /// `contributions.KIND(decl, Code::sync(...))`: the code reads the parameters (`lets`),
    /// calls the method and answers with its value.
    fn register(&self, kind: &Kind, decl: &impl Serialize, lets: Vec<TokenStream>) -> TokenStream {
        let register = Ident::new(kind.register, Span::call_site());
        let request = Ident::new(kind.request, Span::call_site());
        let p = quote!(::plugin_api::__private);
        let request = quote!(#p::#request);
        let decl = to_json(decl);
        let call = method_call(
            self.has_self,
            &self.fn_name,
            &self.call_args,
            self.is_async,
            self.is_result,
        );
        let context = self.takes_context.then(|| {
            quote!(let __context = ::plugin_api::Context::current()
                .unwrap_or_else(::plugin_api::Context::detached);)
        });
        let body = quote!(#context #(#lets)* request.answer(#call));
        let code = if self.is_async {
            quote! {
                #p::Code::asynchronous(move |request: #request| {
                    let this = ::std::sync::Arc::clone(&this);
                    async move { #body }
                })
            }
        } else {
            quote!(#p::Code::sync(move |request: #request| { #body }))
        };
        quote! {{
            #[allow(unused_variables)]
            let this = ::std::sync::Arc::clone(self);
            contributions.#register(#decl, #code);
        }}
    }
}

/// `T` when `ty` is spelled `Option<T>`.
fn option_of(ty: &Type) -> Option<Type> {
    let Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        syn::GenericArgument::Type(inner) if args.args.len() == 1 => Some(inner.clone()),
        _ => None,
    }
}
