//! The `#[plugin]` attribute of `plugin-api`. Use it through `plugin_api::plugin`.
//!
//! One declaration, an `impl` block, produces both the manifest (JSON in a link section, read
//! by the host without opening the library) and the code that registers the same tools, so the
//! two cannot drift. Mistakes that can be seen here are compile errors: an empty or duplicate
//! tool name, a tool in a toolset the plugin does not declare, `meta` that is not a JSON object.

mod attrs;
mod contributions;
mod expand;
mod handler;

use proc_macro::TokenStream;

/// Declares a plugin: its manifest, its toolsets and its tools, on an `impl` block of a type
/// that implements `Default`. See the `plugin-api` crate documentation for a complete example.
#[proc_macro_attribute]
pub fn plugin(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut plugin_args = attrs::PluginArgs::default();
    let parser = syn::meta::parser(|meta| plugin_args.parse(meta));
    if let Err(e) = syn::parse::Parser::parse(parser, args) {
        return e.to_compile_error().into();
    }
    let item = syn::parse_macro_input!(item as syn::ItemImpl);
    expand::plugin(plugin_args, item)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
