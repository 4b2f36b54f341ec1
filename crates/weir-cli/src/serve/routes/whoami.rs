//! `GET /whoami`: what the request's credential may do, so that the page offers only what the
//! token can use (a read-only token sees no Delete buttons) and a script can check its token
//! before a long upload.
//!
//! ```json
//! {"token": "alice", "scopes": ["read", "create"], "prefix": "photos"}
//! ```
//!
//! `token` is the credential's name (never the token), `null` without one; `scopes` are what
//! it may do (`read`, `create`, `write`, `delete`); `prefix` the folder it is confined to, or
//! `null`. Without a credential the scopes are what anyone may do here (all of them on a server
//! without tokens, `read` with `--public-read`, none otherwise). A token that is not known is
//! `401`, as on every route; the page's cookie counts as on reads. The answer is never cached:
//! it depends on the credential.

use crate::serve::auth::{self, Access, Auth};
use crate::serve::reply::{self, Problem};
use crate::serve::service::{method_not_allowed, unauthorized};
use http::{Method, StatusCode};
use weir::{Exchange, http};

/// The route's path.
pub(in crate::serve) const PATH: &str = "/whoami";

/// Answers `GET`/`HEAD /whoami` with `auth`, the token requirements in force.
pub(in crate::serve) async fn serve(ex: &mut Exchange<'_>, auth: &Auth) -> Result<(), weir::Error> {
    if !matches!(*ex.request().method(), Method::GET | Method::HEAD) {
        return method_not_allowed(ex, "GET, HEAD").await;
    }
    let authorization = match auth::authorization(ex.request()) {
        Ok(a) => a,
        Err(message) => return reply::error(ex, Problem::BadRequest, message, &[]).await,
    };
    if auth.rejects(authorization) {
        return unauthorized(ex).await;
    }
    let credential = auth
        .identify(authorization)
        .or_else(|| auth.identify_cookie(ex.request()));
    let value = match credential {
        Some(c) => serde_json::json!({
            "token": &**c.name(),
            "scopes": c.scope_names(),
            "prefix": c.prefix(),
        }),
        None => {
            let open = |access, name| (!auth.required(access)).then_some(name);
            let scopes: Vec<&str> = [
                open(Access::Read, "read"),
                open(Access::Write, "write"),
                open(Access::Delete, "delete"),
            ]
            .into_iter()
            .flatten()
            .collect();
            serde_json::json!({ "token": null, "scopes": scopes, "prefix": null })
        }
    };
    reply::json_with(ex, StatusCode::OK, &value, &[("cache-control", "no-store")]).await
}
