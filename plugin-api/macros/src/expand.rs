//! Code generation: the manifest record, one `Tool` per `#[tool]` method, the dispatch of
//! `#[extend]` methods by their index in the manifest's `extends`, and the root module.

use std::collections::HashSet;

use plugin_manifest::{Activation, Manifest, ToolDecl};
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote};
use serde::Serialize;
use syn::{
    FnArg, Ident, ImplItem, ImplItemFn, ItemImpl, LitStr, Pat, ReturnType, Type, spanned::Spanned,
};

use crate::{
    attrs::{ArgArgs, ExtendArgs, PluginArgs, ToolArgs, ToolsetArgs, doc_comment},
    contributions::ContributionMethods,
};

/// One `#[extend]` method, parsed: what the manifest says, and how to call it.
struct ExtendMethod {
    args: ExtendArgs,
    call: TokenStream,
}

/// One `#[tool]` method, parsed.
struct ToolMethod {
    decl: ToolDecl,
    /// Where its name is given: `name = "..."`, else the method's name.
    name_span: Span,
    /// Where its toolset is given: `toolset = "..."`, else the method's name.
    toolset_span: Span,
    tokens: TokenStream,
}

pub(crate) fn plugin(args: PluginArgs, mut item: ItemImpl) -> syn::Result<TokenStream> {
    if let Some((_, path, _)) = &item.trait_ {
        return Err(syn::Error::new(
            path.span(),
            "#[plugin] goes on an inherent impl block, not a trait impl",
        ));
    }
    if !item.generics.params.is_empty() {
        return Err(syn::Error::new(
            item.generics.span(),
            "a plugin type cannot be generic",
        ));
    }
    let env = |key: &str| std::env::var(key).unwrap_or_default();
    let name = args
        .name
        .as_ref()
        .map_or_else(|| env("CARGO_PKG_NAME"), LitStr::value);
    let version = args
        .version
        .as_ref()
        .map_or_else(|| env("CARGO_PKG_VERSION"), LitStr::value);
    let description = args
        .description
        .as_ref()
        .map_or_else(|| doc_comment(&item.attrs), LitStr::value);

    let mut toolsets = Vec::new();
    let mut toolset_names = HashSet::new();
    for t in &args.toolsets {
        if !toolset_names.insert(t.name.value()) {
            return Err(syn::Error::new(
                t.name.span(),
                format!("toolset `{}` is declared twice", t.name.value()),
            ));
        }
        toolsets.push(t.decl());
    }
    // A plugin with tools and no toolset gets one named after it; a plugin that only extends
    // other plugins' tools has nothing to select, so it gets none.
    let has_tools = item.items.iter().any(|i| {
        matches!(i, ImplItem::Fn(m) if m.attrs.iter().any(|a| a.path().is_ident("tool") || a.path().is_ident("dynamic_tools")
            || crate::contributions::ATTRIBUTES.iter().any(|n| a.path().is_ident(n))))
    });
    if toolsets.is_empty() && has_tools {
        toolset_names.insert(name.clone());
        toolsets.push(ToolsetArgs::new(LitStr::new(&name, Span::call_site())).decl());
    }
    // The plugin's own toolset: the one named after it, else the first it declares.
    let own_toolset = if toolset_names.contains(&name) {
        name.clone()
    } else {
        toolsets.first().map(|t| t.name.clone()).unwrap_or_default()
    };

    let self_ty = &item.self_ty;
    let mut tools: Vec<ToolMethod> = Vec::new();
    let mut extend_methods: Vec<ExtendMethod> = Vec::new();
    let mut dynamic = None;
    let mut on_stop = None;
    let mut contributions = ContributionMethods::default();
    for impl_item in &mut item.items {
        let ImplItem::Fn(method) = impl_item else {
            continue;
        };
        if contributions.take(&own_toolset, &toolset_names, method)? {
            continue;
        }
        if let Some(pos) = method
            .attrs
            .iter()
            .position(|a| a.path().is_ident("extend"))
        {
            let attr = method.attrs.remove(pos);
            extend_methods.push(extend_method(ExtendArgs::from_attr(&attr)?, method)?);
        } else if take_marker(&mut method.attrs, "dynamic_tools") {
            dynamic = Some(method.sig.ident.clone());
        } else if take_marker(&mut method.attrs, "on_stop") {
            on_stop = Some(method.sig.ident.clone());
        } else if let Some(pos) = method.attrs.iter().position(|a| a.path().is_ident("tool")) {
            let attr = method.attrs.remove(pos);
            let tool = tool_method(&own_toolset, ToolArgs::from_attr(&attr)?, method)?;
            let ToolDecl {
                name: tool_name,
                toolset,
                ..
            } = &tool.decl;
            if tools.iter().any(|t| t.decl.name == *tool_name) {
                return Err(syn::Error::new(
                    tool.name_span,
                    format!("tool `{tool_name}` is declared twice"),
                ));
            }
            if !toolset_names.contains(toolset) {
                return Err(syn::Error::new(
                    tool.toolset_span,
                    format!(
                        "tool `{tool_name}` is in toolset `{toolset}`, which this plugin does not declare"
                    ),
                ));
            }
            tools.push(tool);
        }
    }

    contributions.check()?;

    let activation = args
        .on_startup
        .then_some(Activation::OnStartup)
        .into_iter()
        .chain(
            args.on_toolset
                .iter()
                .map(|t| Activation::OnToolset(t.value())),
        )
        .collect();
    let mut manifest = Manifest {
        // plugin-api depends on this crate and on plugin-abi at exactly these versions: the ABI
        // this crate's code is generated for is the one it is built with.
        abi: plugin_abi::VERSION.to_owned(),
        name: name.clone(),
        version,
        description,
        toolsets,
        activation,
        tools: tools.iter().map(|t| t.decl.clone()).collect(),
        dynamic_tools: dynamic.is_some(),
        // Attribute extensions first, then `#[extend]` methods: the indices `wrap` dispatches on.
        extends: args
            .extends
            .iter()
            .map(|e| e.decl(false))
            .chain(extend_methods.iter().map(|e| e.args.decl(true)))
            .collect(),
        resources: Vec::new(),
        resource_templates: Vec::new(),
        prompts: Vec::new(),
        completions: Vec::new(),
    };
    contributions.manifest(&mut manifest);
    let record = plugin_manifest::section::encode(&to_json(&manifest));
    let record_len = record.len();
    let record = proc_macro2::Literal::byte_string(&record);

    let tool_tokens = tools.iter().map(|t| &t.tokens);
    let dynamic_tokens = dynamic.map(|m| quote!(tools.extend(Self::#m(self));));
    let stop_tokens = on_stop.map(|m| quote!(fn stop(&self) { Self::#m(self) }));
    let targets = args
        .extends
        .iter()
        .chain(extend_methods.iter().map(|e| &e.args))
        .map(|e| e.tool.value());
    let first_method = args.extends.len();
    let arms = extend_methods.iter().enumerate().map(|(i, e)| {
        let index = u32::try_from(first_method + i).unwrap_or(u32::MAX);
        let call = &e.call;
        quote!(#index => #call,)
    });
    let wrap_tokens = (!extend_methods.is_empty()).then(|| {
        quote! {
            fn wrap(
                &self,
                extension: u32,
                original: ::plugin_api::Original,
            ) -> ::core::result::Result<::plugin_api::Wrapped, ::plugin_api::ToolError> {
                match extension {
                    #(#arms)*
                    _ => {
                        ::core::mem::drop(original);
                        ::core::result::Result::Err(::plugin_api::__private::no_wrap(extension))
                    }
                }
            }
        }
    });
    let contribution_tokens = contributions.definition();
    let loader = Ident::new(
        &abi_stable_shared::mangled_root_module_loader_name(),
        Span::call_site(),
    );
    let p = quote!(::plugin_api::__private);
    let abi = quote!(#p::abi_stable);

    Ok(quote! {
        #item

        impl #p::PluginDefinition for #self_ty {
            const NAME: &'static str = #name;
            const OWN_TOOLSET: &'static str = #own_toolset;
            const EXTENDS: &'static [&'static str] = &[#(#targets),*];

            fn create() -> Self {
                <Self as ::core::default::Default>::default()
            }

            fn manifest_record() -> &'static [u8] {
                #[used]
                #[cfg_attr(target_vendor = "apple", unsafe(link_section = "__DATA,__rmcpmf"))]
                #[cfg_attr(not(target_vendor = "apple"), unsafe(link_section = ".rmcpmf"))]
                static MANIFEST_RECORD: [u8; #record_len] = *#record;
                &MANIFEST_RECORD
            }

            #[allow(clippy::vec_init_then_push, unused_mut)]
            fn tools(self: &::std::sync::Arc<Self>) -> ::std::vec::Vec<::plugin_api::Tool> {
                let mut tools = ::std::vec::Vec::new();
                #(tools.push(#tool_tokens);)*
                #dynamic_tokens
                tools
            }

            #stop_tokens

            #wrap_tokens

            #contribution_tokens
        }

        const _: () = {
            extern "C" fn manifest() -> #abi::std_types::RStr<'static> {
                #p::manifest_json(<#self_ty as #p::PluginDefinition>::manifest_record())
            }

            extern "C" fn instantiate() -> #abi::std_types::RResult<
                ::plugin_api::__private::ffi::PluginInstanceBox,
                ::plugin_api::error::FfiError,
            > {
                #p::instantiate::<#self_ty>()
            }

            fn root_module() -> ::plugin_api::__private::ffi::PluginModRef {
                #abi::prefix_type::PrefixTypeTrait::leak_into_prefix(::plugin_api::__private::ffi::PluginMod {
                    manifest,
                    instantiate,
                })
            }

            extern "C" fn erased_root_module() -> #abi::library::RootModuleResult {
                #abi::library::__call_root_module_loader(root_module)
            }

            /// The header abi_stable looks up when the host opens this library.
            #[unsafe(no_mangle)]
            pub static #loader: #abi::library::LibHeader = {
                // SAFETY: `erased_root_module` returns a `PluginModRef` erased by abi_stable's
                // own loader, which is what `from_constructor::<PluginModRef>` requires.
                unsafe {
                    #abi::library::LibHeader::from_constructor::<::plugin_api::__private::ffi::PluginModRef>(
                        erased_root_module,
                        #abi::library::CheckTypeLayout::Yes,
                    )
                }
            };
        };
    })
}

/// Checks one `#[extend]` method, `fn(&self, original: Original) -> Wrapped` (or
/// `Result<Wrapped, E>`), and generates its call for the `wrap` dispatch.
fn extend_method(args: ExtendArgs, method: &ImplItemFn) -> syn::Result<ExtendMethod> {
    let sig = &method.sig;
    let shape_error = || {
        syn::Error::new(
            sig.span(),
            "an #[extend] method is `fn(&self, original: plugin_api::Original) -> plugin_api::Wrapped` \
             (or `-> Result<Wrapped, E>`); it builds the new handler, which may be async",
        )
    };
    if sig.asyncness.is_some() || !sig.generics.params.is_empty() {
        return Err(shape_error());
    }
    let mut has_self = false;
    let mut typed = 0;
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) if r.reference.is_some() && r.mutability.is_none() => {
                has_self = true;
            }
            FnArg::Receiver(_) => return Err(shape_error()),
            FnArg::Typed(_) => typed += 1,
        }
    }
    if typed != 1 {
        return Err(shape_error());
    }
    let fn_name = &sig.ident;
    let call = if has_self {
        quote!(Self::#fn_name(self, original))
    } else {
        quote!(Self::#fn_name(original))
    };
    let call = if returns_result(&sig.output) {
        quote!(::core::result::Result::map_err(#call, ::plugin_api::ToolError::from))
    } else {
        quote!(::core::result::Result::Ok(#call))
    };
    Ok(ExtendMethod { args, call })
}

/// Whether a parameter is the call's context: its type is spelled `Context` or `&Context`
/// (any path ending so, without generics); `Some(true)` when taken by reference.
pub(crate) fn context_param(ty: &Type) -> Option<bool> {
    let (ty, by_ref) = match ty {
        Type::Reference(r) if r.mutability.is_none() => (&*r.elem, true),
        other => (other, false),
    };
    match ty {
        Type::Path(p)
            if p.qself.is_none()
                && p.path.segments.last().is_some_and(|s| {
                    s.ident == "Context" && matches!(s.arguments, syn::PathArguments::None)
                }) =>
        {
            Some(by_ref)
        }
        _ => None,
    }
}

/// Whether a return type is spelled `Result<..>`.
pub(crate) fn returns_result(output: &ReturnType) -> bool {
    match output {
        ReturnType::Type(_, ty) => {
            matches!(&**ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Result"))
        }
        ReturnType::Default => false,
    }
}

/// How a `#[tool]` or contribution method is called in its handler: `this.f(args)` (or
/// `Self::f(args)` without `&self`), awaited when `async`, an `Err` returned as a `ToolError`.
pub(crate) fn method_call(
    has_self: bool,
    fn_name: &Ident,
    args: &[impl ToTokens],
    is_async: bool,
    is_result: bool,
) -> TokenStream {
    let receiver = if has_self {
        quote!(this.)
    } else {
        quote!(Self::)
    };
    let mut call = quote!(#receiver #fn_name(#(#args),*));
    if is_async {
        call = quote!(#call.await);
    }
    if is_result {
        call = quote!(::core::result::Result::map_err(#call, ::plugin_api::ToolError::from)?);
    }
    call
}

/// A declaration as the JSON the manifest and the generated code carry.
pub(crate) fn to_json(decl: &impl Serialize) -> String {
    serde_json::to_string(decl).expect("a declaration has string keys, so it serialises")
}

fn take_marker(attrs: &mut Vec<syn::Attribute>, name: &str) -> bool {
    let before = attrs.len();
    attrs.retain(|a| !a.path().is_ident(name));
    attrs.len() != before
}

/// Parses one `#[tool]` method and generates the expression that builds its `Tool`.
fn tool_method(
    own_toolset: &str,
    args: ToolArgs,
    method: &mut ImplItemFn,
) -> syn::Result<ToolMethod> {
    let span = method.sig.ident.span();
    let fn_name = method.sig.ident.clone();
    if let (Some(inline), Some(_)) = (args.inline, method.sig.asyncness) {
        return Err(syn::Error::new(
            inline,
            "`inline` is for `fn` tools: an `async fn` tool is already polled where the host polls it",
        ));
    }
    let name = args
        .name
        .as_ref()
        .map_or_else(|| fn_name.to_string(), LitStr::value);
    let toolset = args
        .toolset
        .as_ref()
        .map_or_else(|| own_toolset.to_owned(), LitStr::value);
    if !method.sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            method.sig.generics.span(),
            "a tool cannot be generic",
        ));
    }

    let mut decl = args.shown.tool(name, toolset, &method.attrs);
    decl.input_schema.clone_from(&args.input_schema);
    decl.task = args.task;
    if let Some(span) = args.input_first {
        if args.task.is_forbidden() {
            return Err(syn::Error::new(
                span,
                "`input_first` is for a tool that runs as a task: add `task = \"optional\"` or `task = \"required\"`",
            ));
        }
        decl.input_first = true;
    }

    let mut has_self = false;
    let mut fields = Vec::new();
    let mut defaults = Vec::new();
    let mut call_args = Vec::new();
    let mut takes_context = false;
    for input in &mut method.sig.inputs {
        let typed = match input {
            FnArg::Receiver(r) => {
                if r.reference.is_none() || r.mutability.is_some() {
                    return Err(syn::Error::new(
                        r.span(),
                        "a tool takes `&self` (tools run concurrently)",
                    ));
                }
                has_self = true;
                continue;
            }
            FnArg::Typed(t) => t,
        };
        if let Some(by_ref) = context_param(&typed.ty) {
            if std::mem::replace(&mut takes_context, true) {
                return Err(syn::Error::new_spanned(
                    &typed.ty,
                    "a tool takes at most one `Context` parameter",
                ));
            }
            call_args.push(if by_ref {
                quote!(&__context)
            } else {
                quote!(::core::clone::Clone::clone(&__context))
            });
            continue;
        }
        let Pat::Ident(pat) = &*typed.pat else {
            return Err(syn::Error::new(
                typed.pat.span(),
                "tool arguments must be plain names",
            ));
        };
        if matches!(&*typed.ty, Type::Reference(_)) {
            return Err(syn::Error::new_spanned(
                &typed.ty,
                "tool arguments must be owned types (`String`, not `&str`)",
            ));
        }
        let ident = pat.ident.clone();
        let ty = (*typed.ty).clone();
        let mut arg = ArgArgs::default();
        let doc = doc_comment(&typed.attrs);
        for attr in typed.attrs.iter().filter(|a| a.path().is_ident("arg")) {
            ArgArgs::from_attr(attr, &mut arg)?;
        }
        // `#[schemars(...)]` (a range, a length) goes to the argument's field, so the schema
        // says it; the parameter itself cannot carry it.
        let (schemars, others): (Vec<_>, Vec<_>) = std::mem::take(&mut typed.attrs)
            .into_iter()
            .partition(|a| a.path().is_ident("schemars"));
        typed.attrs = others;
        typed
            .attrs
            .retain(|a| !a.path().is_ident("arg") && !a.path().is_ident("doc"));

        let mut attrs: Vec<_> = schemars.iter().map(|a| quote!(#a)).collect();
        let description = arg.description.map(|d| d.value()).unwrap_or(doc);
        if !description.is_empty() {
            attrs.push(quote!(#[schemars(description = #description)]));
        }
        if let Some(rename) = &arg.rename {
            attrs.push(quote!(#[serde(rename = #rename)]));
        }
        if let Some(header) = &arg.header {
            attrs.push(quote!(#[schemars(extend("x-mcp-header" = #header))]));
        }
        if let Some(default) = &arg.default {
            let default_fn = format_ident!("default_{}", ident);
            let default_path = default_fn.to_string();
            let value = match default {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(_),
                    ..
                }) => {
                    quote!(::core::convert::Into::into(#default))
                }
                other => quote!(#other),
            };
            defaults.push(quote!(fn #default_fn() -> #ty { #value }));
            attrs.push(quote!(#[serde(default = #default_path)]));
        }
        fields.push(quote!(#(#attrs)* #ident: #ty));
        call_args.push(quote!(arguments.#ident));
    }

    let is_async = method.sig.asyncness.is_some();
    let value = method_call(
        has_self,
        &fn_name,
        &call_args,
        is_async,
        returns_result(&method.sig.output),
    );
    let p = quote!(::plugin_api::__private);
    let decl_json = to_json(&decl);
    // A schema written in the attribute is in the declaration already, and stays as written.
    let generated_schema = args.input_schema.is_none().then(|| {
        quote! {
            decl.input_schema =
                ::core::option::Option::Some(::plugin_api::schema_for::<Arguments>());
        }
    });
    let body = quote! {
        let arguments: Arguments = #p::parse_arguments(&arguments)?;
        #p::to_output(#value)
    };
    let handler = if is_async {
        quote! {
            ::plugin_api::Tool::__async(
                decl,
                move |arguments: ::std::string::String, __context: ::plugin_api::Context| {
                    let this = ::std::sync::Arc::clone(&this);
                    async move { #body }
                },
            )
        }
    } else {
        let constructor = if args.inline.is_some() {
            quote!(__inline)
        } else {
            quote!(__sync)
        };
        quote! {
            ::plugin_api::Tool::#constructor(
                decl,
                move |arguments: ::std::string::String, __context: ::plugin_api::Context| { #body },
            )
        }
    };
    let tokens = quote! {{
        #[derive(#p::serde::Deserialize, #p::schemars::JsonSchema)]
        #[serde(crate = "::plugin_api::__private::serde", deny_unknown_fields)]
        #[schemars(crate = "::plugin_api::__private::schemars")]
        struct Arguments { #(#fields,)* }
        #(#defaults)*
        let mut decl: ::plugin_api::manifest::ToolDecl = #p::serde_json::from_str(#decl_json)
            .expect("the #[plugin] attribute wrote a valid tool declaration");
        #generated_schema
        #[allow(unused_variables)]
        let this = ::std::sync::Arc::clone(self);
        #handler
    }};
    Ok(ToolMethod {
        decl,
        name_span: args.name.as_ref().map_or(span, LitStr::span),
        toolset_span: args.toolset.as_ref().map_or(span, LitStr::span),
        tokens,
    })
}
