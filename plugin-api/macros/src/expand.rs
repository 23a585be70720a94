//! Code generation: the manifest record, one `Tool` per `#[tool]` method, the dispatch of
//! `#[extend]` methods by their index in the manifest's `extends`, and the root module.

use std::collections::HashSet;

use plugin_manifest::{Activation, Manifest, ToolDecl, ToolsetDecl};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{
    Attribute, Expr, ExprLit, FnArg, Ident, ImplItem, ImplItemFn, ItemImpl, Lit, LitStr, Pat,
    PatType, Type, spanned::Spanned,
};

use crate::{
    attrs::{ArgArgs, ExtendArgs, PluginArgs, ToolArgs, ToolsetArgs, doc_comment},
    contributions::{ATTRIBUTES, ContributionMethods},
    handler::{context_arg, context_param, method_call, returns_result, to_json},
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

/// The plugin's toolsets, as the manifest declares them.
struct Toolsets {
    decls: Vec<ToolsetDecl>,
    names: HashSet<String>,
    /// The one named after the plugin, else the first it declares.
    own: String,
}

/// Every method an attribute marks, parsed, in declaration order.
#[derive(Default)]
struct Methods {
    tools: Vec<ToolMethod>,
    extends: Vec<ExtendMethod>,
    /// The `#[dynamic_tools]` method.
    dynamic: Option<Ident>,
    /// The `#[on_stop]` method.
    on_stop: Option<Ident>,
    contributions: ContributionMethods,
}

/// Expands `#[plugin]`: the impl block, its `PluginDefinition` and the library's root module.
pub(crate) fn plugin(args: PluginArgs, mut item: ItemImpl) -> syn::Result<TokenStream> {
    check_impl(&item)?;
    let name = args
        .name
        .as_ref()
        .map_or_else(|| cargo_env("CARGO_PKG_NAME"), LitStr::value);
    let toolsets = Toolsets::of(&args, &item, &name)?;
    let methods = Methods::collect(&mut item, &toolsets)?;
    let manifest = manifest(&args, &item, name.clone(), toolsets.decls, &methods);
    let definition = definition(
        &args,
        &item.self_ty,
        &name,
        &toolsets.own,
        &manifest,
        &methods,
    );
    let root_module = root_module(&item.self_ty);
    Ok(quote! {
        #item

        #definition

        #root_module
    })
}

/// An error unless `item` is an inherent impl block without generics.
fn check_impl(item: &ItemImpl) -> syn::Result<()> {
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
    Ok(())
}

/// A variable Cargo sets for the package being built, empty when unset.
fn cargo_env(key: &str) -> String {
    std::env::var(key).unwrap_or_default()
}

impl Toolsets {
    /// The toolsets `args` declares (an error for one declared twice); with none, one named
    /// `name` if `item` has tools.
    fn of(args: &PluginArgs, item: &ItemImpl, name: &str) -> syn::Result<Self> {
        let mut decls = Vec::new();
        let mut names = HashSet::new();
        for t in &args.toolsets {
            if !names.insert(t.name.value()) {
                return Err(syn::Error::new(
                    t.name.span(),
                    format!("toolset `{}` is declared twice", t.name.value()),
                ));
            }
            decls.push(t.decl());
        }
        // A plugin with tools and no toolset gets one named after it; a plugin that only extends
        // other plugins' tools has nothing to select, so it gets none.
        if decls.is_empty() && has_tools(item) {
            names.insert(name.to_owned());
            decls.push(ToolsetArgs::new(LitStr::new(name, Span::call_site())).decl());
        }
        let own = if names.contains(name) {
            name.to_owned()
        } else {
            decls.first().map(|t| t.name.clone()).unwrap_or_default()
        };
        Ok(Self { decls, names, own })
    }
}

/// Whether a method of `item` offers something a toolset selects: a tool, dynamic tools or a
/// contribution.
fn has_tools(item: &ItemImpl) -> bool {
    item.items.iter().any(|i| {
        matches!(i, ImplItem::Fn(m) if m.attrs.iter().any(|a| a.path().is_ident("tool") || a.path().is_ident("dynamic_tools")
            || ATTRIBUTES.iter().any(|n| a.path().is_ident(n))))
    })
}

impl Methods {
    /// Parses the marked methods of `item`, removing their attributes, and checks the
    /// contributions across them.
    fn collect(item: &mut ItemImpl, toolsets: &Toolsets) -> syn::Result<Self> {
        let mut methods = Self::default();
        for impl_item in &mut item.items {
            if let ImplItem::Fn(method) = impl_item {
                methods.take(method, toolsets)?;
            }
        }
        methods.contributions.check()?;
        Ok(methods)
    }

    /// Parses `method` if an attribute marks it, and removes the attribute.
    fn take(&mut self, method: &mut ImplItemFn, toolsets: &Toolsets) -> syn::Result<()> {
        if self
            .contributions
            .take(&toolsets.own, &toolsets.names, method)?
        {
            return Ok(());
        }
        if let Some(pos) = method
            .attrs
            .iter()
            .position(|a| a.path().is_ident("extend"))
        {
            let attr = method.attrs.remove(pos);
            self.extends
                .push(extend_method(ExtendArgs::from_attr(&attr)?, method)?);
        } else if take_marker(&mut method.attrs, "dynamic_tools") {
            self.dynamic = Some(method.sig.ident.clone());
        } else if take_marker(&mut method.attrs, "on_stop") {
            self.on_stop = Some(method.sig.ident.clone());
        } else if let Some(pos) = method.attrs.iter().position(|a| a.path().is_ident("tool")) {
            let attr = method.attrs.remove(pos);
            let tool = tool_method(&toolsets.own, ToolArgs::from_attr(&attr)?, method)?;
            self.add_tool(tool, &toolsets.names)?;
        }
        Ok(())
    }

    /// Adds `tool`; an error if another tool has its name or `toolsets` lacks its toolset.
    fn add_tool(&mut self, tool: ToolMethod, toolsets: &HashSet<String>) -> syn::Result<()> {
        let ToolDecl {
            name: tool_name,
            toolset,
            ..
        } = &tool.decl;
        if self.tools.iter().any(|t| t.decl.name == *tool_name) {
            return Err(syn::Error::new(
                tool.name_span,
                format!("tool `{tool_name}` is declared twice"),
            ));
        }
        if !toolsets.contains(toolset) {
            return Err(syn::Error::new(
                tool.toolset_span,
                format!(
                    "tool `{tool_name}` is in toolset `{toolset}`, which this plugin does not declare"
                ),
            ));
        }
        self.tools.push(tool);
        Ok(())
    }
}

/// The manifest: what `args` and the impl block declare, and the parsed `methods`.
fn manifest(
    args: &PluginArgs,
    item: &ItemImpl,
    name: String,
    toolsets: Vec<ToolsetDecl>,
    methods: &Methods,
) -> Manifest {
    let version = args
        .version
        .as_ref()
        .map_or_else(|| cargo_env("CARGO_PKG_VERSION"), LitStr::value);
    let description = args
        .description
        .as_ref()
        .map_or_else(|| doc_comment(&item.attrs), LitStr::value);
    let mut manifest = Manifest {
        // plugin-api depends on this crate and on plugin-abi at exactly these versions: the ABI
        // this crate's code is generated for is the one it is built with.
        abi: plugin_abi::VERSION.to_owned(),
        name,
        version,
        description,
        toolsets,
        activation: activation(args),
        tools: methods.tools.iter().map(|t| t.decl.clone()).collect(),
        dynamic_tools: methods.dynamic.is_some(),
        // Attribute extensions first, then `#[extend]` methods: the indices `wrap` dispatches on.
        extends: args
            .extends
            .iter()
            .map(|e| e.decl(false))
            .chain(methods.extends.iter().map(|e| e.args.decl(true)))
            .collect(),
        resources: Vec::new(),
        resource_templates: Vec::new(),
        prompts: Vec::new(),
        completions: Vec::new(),
        permissions: args.permissions.clone(),
    };
    methods.contributions.manifest(&mut manifest);
    manifest
}

/// When the host starts the plugin: `on_startup`, then on each toolset of `on_toolset`.
fn activation(args: &PluginArgs) -> Vec<Activation> {
    args.on_startup
        .then_some(Activation::OnStartup)
        .into_iter()
        .chain(
            args.on_toolset
                .iter()
                .map(|t| Activation::OnToolset(t.value())),
        )
        .collect()
}

/// The plugin type's `PluginDefinition`: its names, its manifest record, its tools, its
/// `#[on_stop]` and `#[extend]` methods and its contributions.
fn definition(
    args: &PluginArgs,
    self_ty: &Type,
    name: &str,
    own_toolset: &str,
    manifest: &Manifest,
    methods: &Methods,
) -> TokenStream {
    let targets = args
        .extends
        .iter()
        .chain(methods.extends.iter().map(|e| &e.args))
        .map(|e| e.tool.value());
    let record_fn = manifest_record(manifest);
    let tool_tokens = methods.tools.iter().map(|t| &t.tokens);
    let dynamic_tokens = methods
        .dynamic
        .as_ref()
        .map(|m| quote!(tools.extend(Self::#m(self));));
    let stop_tokens = methods
        .on_stop
        .as_ref()
        .map(|m| quote!(fn stop(&self) { Self::#m(self) }));
    let wrap_tokens = wrap(args.extends.len(), &methods.extends);
    let contribution_tokens = methods.contributions.definition();
    let p = quote!(::plugin_api::__private);
    quote! {
        impl #p::PluginDefinition for #self_ty {
            const NAME: &'static str = #name;
            const OWN_TOOLSET: &'static str = #own_toolset;
            const EXTENDS: &'static [&'static str] = &[#(#targets),*];

            fn create() -> Self {
                <Self as ::core::default::Default>::default()
            }

            #record_fn

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
    }
}

/// `manifest_record()`: the encoded manifest, in the link section the host reads without
/// opening the library.
fn manifest_record(manifest: &Manifest) -> TokenStream {
    let record = plugin_manifest::section::encode(&to_json(manifest));
    let record_len = record.len();
    let record = proc_macro2::Literal::byte_string(&record);
    quote! {
        fn manifest_record() -> &'static [u8] {
            #[used]
            #[cfg_attr(target_vendor = "apple", unsafe(link_section = "__DATA,__rmcpmf"))]
            #[cfg_attr(not(target_vendor = "apple"), unsafe(link_section = ".rmcpmf"))]
            static MANIFEST_RECORD: [u8; #record_len] = *#record;
            &MANIFEST_RECORD
        }
    }
}

/// `wrap()`, if there are `#[extend]` methods: each called by its index in the manifest's
/// `extends`, where they follow the `first_method` attribute extensions.
fn wrap(first_method: usize, extends: &[ExtendMethod]) -> Option<TokenStream> {
    let arms = extends.iter().enumerate().map(|(i, e)| {
        let index = u32::try_from(first_method + i).unwrap_or(u32::MAX);
        let call = &e.call;
        quote!(#index => #call,)
    });
    (!extends.is_empty()).then(|| {
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
    })
}

/// The library's root module: the `extern "C"` functions the host calls, and the header
/// abi_stable finds them by.
fn root_module(self_ty: &Type) -> TokenStream {
    let loader = Ident::new(
        &abi_stable_shared::mangled_root_module_loader_name(),
        Span::call_site(),
    );
    let p = quote!(::plugin_api::__private);
    let abi = quote!(#p::abi_stable);
    quote! {
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
                    log_to: #p::log_to,
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
    }
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

/// Removes the marker attribute `name` from `attrs`; whether it was there.
fn take_marker(attrs: &mut Vec<Attribute>, name: &str) -> bool {
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
    check_tool(&args, method)?;
    let decl = tool_decl(own_toolset, &args, method)?;
    let params = ToolParams::of(method)?;
    let is_async = method.sig.asyncness.is_some();
    let value = method_call(
        params.has_self,
        &method.sig.ident,
        &params.call_args,
        is_async,
        returns_result(&method.sig.output),
    );
    let handler = tool_handler(is_async, args.inline.is_some(), &value);
    let tokens = tool_tokens(&decl, args.input_schema.is_none(), &params, &handler);
    Ok(ToolMethod {
        decl,
        name_span: args.name.as_ref().map_or(span, LitStr::span),
        toolset_span: args.toolset.as_ref().map_or(span, LitStr::span),
        tokens,
    })
}

/// An error for an `inline` async tool, and for a generic one.
fn check_tool(args: &ToolArgs, method: &ImplItemFn) -> syn::Result<()> {
    if let (Some(inline), Some(_)) = (args.inline, method.sig.asyncness) {
        return Err(syn::Error::new(
            inline,
            "`inline` is for `fn` tools: an `async fn` tool is already polled where the host polls it",
        ));
    }
    if !method.sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            method.sig.generics.span(),
            "a tool cannot be generic",
        ));
    }
    Ok(())
}

/// The tool's declaration: its name (default: the method's), its toolset (default:
/// `own_toolset`) and what `args` and the doc comment say; an error for `input_first` without
/// `task`.
fn tool_decl(own_toolset: &str, args: &ToolArgs, method: &ImplItemFn) -> syn::Result<ToolDecl> {
    let name = args
        .name
        .as_ref()
        .map_or_else(|| method.sig.ident.to_string(), LitStr::value);
    let toolset = args
        .toolset
        .as_ref()
        .map_or_else(|| own_toolset.to_owned(), LitStr::value);
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
    Ok(decl)
}

/// A tool's parameters, read: the fields of its `Arguments` struct, the functions giving their
/// defaults, and what the method is called with.
#[derive(Default)]
struct ToolParams {
    has_self: bool,
    fields: Vec<TokenStream>,
    defaults: Vec<TokenStream>,
    call_args: Vec<TokenStream>,
    takes_context: bool,
}

impl ToolParams {
    /// Reads `method`'s parameters, moving their `#[schemars]` attributes to the fields and
    /// removing their `#[arg]` and doc attributes.
    fn of(method: &mut ImplItemFn) -> syn::Result<Self> {
        let mut params = Self::default();
        for input in &mut method.sig.inputs {
            match input {
                FnArg::Receiver(r) => {
                    if r.reference.is_none() || r.mutability.is_some() {
                        return Err(syn::Error::new(
                            r.span(),
                            "a tool takes `&self` (tools run concurrently)",
                        ));
                    }
                    params.has_self = true;
                }
                FnArg::Typed(typed) => params.typed(typed)?,
            }
        }
        Ok(params)
    }

    /// Reads one typed parameter: the call's context, or an argument.
    fn typed(&mut self, typed: &mut PatType) -> syn::Result<()> {
        if let Some(by_ref) = context_param(&typed.ty) {
            if std::mem::replace(&mut self.takes_context, true) {
                return Err(syn::Error::new_spanned(
                    &typed.ty,
                    "a tool takes at most one `Context` parameter",
                ));
            }
            self.call_args.push(context_arg(by_ref));
            return Ok(());
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
        self.argument(ident, (*typed.ty).clone(), arg, doc, &schemars);
        Ok(())
    }

    /// Adds the argument `ident: ty`: its field, with the `schemars` attributes and what `arg`
    /// (else the doc comment `doc`) says, its default function, and its place in the call.
    fn argument(
        &mut self,
        ident: Ident,
        ty: Type,
        arg: ArgArgs,
        doc: String,
        schemars: &[Attribute],
    ) {
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
            let (default_fn, attr) = default_fn(&ident, &ty, default);
            self.defaults.push(default_fn);
            attrs.push(attr);
        }
        self.fields.push(quote!(#(#attrs)* #ident: #ty));
        self.call_args.push(quote!(arguments.#ident));
    }
}

/// The function giving the argument `ident`'s `default` (a string literal converted `Into` its
/// type `ty`), and the serde attribute naming it.
fn default_fn(ident: &Ident, ty: &Type, default: &Expr) -> (TokenStream, TokenStream) {
    let default_fn = format_ident!("default_{}", ident);
    let default_path = default_fn.to_string();
    let value = match default {
        Expr::Lit(ExprLit {
            lit: Lit::Str(_), ..
        }) => {
            quote!(::core::convert::Into::into(#default))
        }
        other => quote!(#other),
    };
    (
        quote!(fn #default_fn() -> #ty { #value }),
        quote!(#[serde(default = #default_path)]),
    )
}

/// The `Tool` whose handler parses the arguments and answers with `value`: async, inline, or
/// sync on the blocking pool.
fn tool_handler(is_async: bool, inline: bool, value: &TokenStream) -> TokenStream {
    let p = quote!(::plugin_api::__private);
    let body = quote! {
        let arguments: Arguments = #p::parse_arguments(&arguments)?;
        #p::to_output(#value)
    };
    if is_async {
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
        let constructor = if inline {
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
    }
}

/// The block that builds the tool: its `Arguments` struct and their defaults, its declaration
/// (with the `generated_schema` unless the attribute wrote one) and its `handler`.
fn tool_tokens(
    decl: &ToolDecl,
    generated_schema: bool,
    params: &ToolParams,
    handler: &TokenStream,
) -> TokenStream {
    let p = quote!(::plugin_api::__private);
    let decl_json = to_json(decl);
    // A schema written in the attribute is in the declaration already, and stays as written.
    let generated_schema = generated_schema.then(|| {
        quote! {
            decl.input_schema =
                ::core::option::Option::Some(::plugin_api::schema_for::<Arguments>());
        }
    });
    let (fields, defaults) = (&params.fields, &params.defaults);
    quote! {{
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
    }}
}
