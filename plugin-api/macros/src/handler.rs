//! What the handlers of `#[tool]` and of contribution methods share: whether a parameter is the
//! call's `Context` and what to pass for it, whether the method returns a `Result`, the call of
//! the method, and a declaration as JSON.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use serde::Serialize;
use syn::{Ident, ReturnType, Type};

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

/// The argument passed for a `Context` parameter: the handler's `__context`, borrowed when
/// `by_ref`, else cloned.
pub(crate) fn context_arg(by_ref: bool) -> TokenStream {
    if by_ref {
        quote!(&__context)
    } else {
        quote!(::core::clone::Clone::clone(&__context))
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
