//! The router: which route serves a request, and the checks made before any route's own.
//! It only dispatches: every route is a module of `routes/` (`files/` and the operations in it,
//! `resumable.rs`, `tus.rs`, `page.rs`), none importing another.
//!
//! | request | answer |
//! | --- | --- |
//! | `GET /healthz` | `200 ok` (never needs a token) |
//! | `PUT /files/{path}` | stream the body into the store: `201` (`200` if replaced) + JSON; `412` if a precondition fails |
//! | `POST /files/{dir}/` (multipart) | every file part into `{dir}`: `201` + JSON list |
//! | `GET`/`HEAD /files/{path}` | the file (`Range`, preconditions: `304`, `412`) |
//! | `GET /files/` or `/files/{dir}/` | JSON listing |
//! | the same with `?tar`, `?zip`, `?html` (or from wget, rclone) | the folder as an archive, or an HTML index (`folder_formats.rs`) |
//! | `PUT /files/{dir}/` without a body | create the folder (and its parents): `201`, `200` if there |
//! | `DELETE /files/{path}` | `204`, `404` if absent, `412` if a precondition fails |
//! | `DELETE /files/{dir}/` | delete the folder if it is empty: `204`, `409` if not (or a file), `404` if absent |
//! | `PUT /files/{path}` or `POST /files/{dir}/` with `Upload-Complete`, `HEAD`/`PATCH`/`DELETE /uploads/{id}` | resumable uploads (`resumable.rs`, with either store) |
//! | `OPTIONS`/`POST /tus/`, `HEAD`/`PATCH`/`DELETE /tus/{id}` | the same uploads over tus 1.0.0 (`tus.rs`, with either store) |
//! | `GET /`, `/assets/...`, a folder's URL asked for as HTML | the browser page (`page.rs`) |
//! | `GET /whoami` | what the request's credential may do, as JSON (`whoami.rs`) |
//! | `OPTIONS`, `PROPFIND`, `PROPPATCH`, `MKCOL`, `GET`, `HEAD`, `PUT`, `DELETE`, `COPY`, `MOVE`, `LOCK`, `UNLOCK` on `/dav/...` | WebDAV classes 1 and 2 over the same store (`webdav/`): `207` multi-status, `423` locked; Basic auth with the token as password. `/dav` without its slash: the root collection (a `301` for `GET`/`HEAD`); `OPTIONS /` WebDAV's answer (Windows asks the server's root) |
//! | `OPTIONS` preflight from a `--cors-origin` | `204` with the allowed methods and fields (`cors.rs`) |
//! | any but `/healthz`, with a `Host` not served | `421` (`host_check.rs`, checked in `observe.rs`) |
//! | a write (`PUT`, `POST`, `PATCH`, `DELETE`) from a browser page of another origin | `403` (`origin_guard.rs`) |
//! | any request on `--s3-api`'s listener | the S3-compatible API (`routes/s3/`, a handler of its own: this router never sees them) |
//!
//! Order of checks for every `/files/` request: method (405), one `Authorization` field at most
//! (400), credential (401), path (400), the credential's scope and prefix (403: `auth.rs`),
//! then the route's own (size 413, preconditions 412:
//! `preconditions.rs`); all of them before any of the body is read, so a refused upload costs
//! the client nothing but its
//! head (weir sends no `100 Continue` for it).

use super::auth::{Access, Auth, Credential, Verdict};
use super::reply::{self, Problem};
use super::routes::resumable;
use super::routes::{files, page, tus, webdav, whoami};
use super::service::{
    Service, forbidden, method_not_allowed, unauthorized, with_files, with_uploads,
};
use super::target::Target;
use super::{cors, origin_guard};
use http::{Method, StatusCode};
use std::sync::Arc;
use weir::{Exchange, http};

impl Service {
    /// Routes one request (entered from `observe.rs`, which logs and counts it).
    pub(super) async fn route(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        // CORS first: a preflight is answered before any route or token check.
        if cors::apply(&self.cors, ex).await? {
            return Ok(());
        }
        if self.refuse_cross_site_writes
            && origin_guard::is_cross_site_write(ex.request(), &self.cors)
        {
            let detail = "a browser page of another origin may not write here (weir serve \
                          --cors-origin lists the origins that may)";
            return reply::error(ex, Problem::CrossSiteWrite, detail, &[]).await;
        }
        let path = ex.request().path();
        if path == "/healthz" {
            return match *ex.request().method() {
                Method::GET | Method::HEAD => {
                    ex.respond(StatusCode::OK)
                        .header("content-type", "text/plain")
                        .body("ok\n")
                        .await
                }
                _ => method_not_allowed(ex, "GET, HEAD").await,
            };
        }
        // Windows' WebClient and Office ask `OPTIONS` of the server's root whatever folder was
        // mapped, and mount only if it names WebDAV (`MS-Author-Via: DAV`).
        if path == "/" && ex.request().method() == Method::OPTIONS {
            return webdav::options(ex).await;
        }
        // The browser page (page.rs), before the token check: it holds no data.
        if let Some(asset) = page::route(ex.request()) {
            return page::serve(ex, asset).await;
        }
        if path == whoami::PATH {
            return whoami::serve(ex, &self.auth()).await;
        }
        // ALLOCATION: the routes that touch the store run in a future of their own on the heap,
        // one per such request. Their futures are large (hashing state, upload and hook
        // buffers); awaited inline they would make every connection's task that large, idle or
        // not, since a task holds its future's largest state for its whole life.
        Box::pin(self.route_store(ex)).await
    }

    /// The routes past `/healthz` and the page: tus, resumable uploads and `/files/`.
    async fn route_store(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        let path = ex.request().path();
        if path == "/tus" || path.starts_with(tus::PREFIX) {
            return self.route_tus(ex).await;
        }
        // WebDAV: its own methods, credentials (Basic too) and answers (`routes/webdav/`).
        if path.starts_with(webdav::PREFIX) {
            return with_files!(self, store => webdav::serve(self, store, ex).await);
        }
        // The mini-redirector asks `/dav` without its slash, and follows no redirect for
        // `PROPFIND`: served as `/dav/`.
        if path == "/dav" && !matches!(*ex.request().method(), Method::GET | Method::HEAD) {
            return with_files!(self, store => webdav::serve(self, store, ex).await);
        }
        if path == "/dav" {
            return ex
                .respond(StatusCode::MOVED_PERMANENTLY)
                .header("location", webdav::PREFIX)
                .empty()
                .await;
        }
        #[cfg(feature = "s3")]
        if matches!(
            self.uploads(),
            super::service::Uploads::Off(super::service::NoUploads::NotWithThisStore)
        ) && path.starts_with(resumable::PREFIX)
        {
            return super::service::not_implemented(ex, "a resumable upload").await;
        }
        // Discovery of resumable uploads (draft §4.1.4): every `/files/` resource takes them.
        if *ex.request().method() == Method::OPTIONS && (path == "*" || path.starts_with("/files/"))
        {
            let limit =
                with_uploads!(self, s => Some(resumable::new_limits(self, s)), off(_) => None);
            return resumable::options(ex, limit).await;
        }
        if let Some(id) = path.strip_prefix(resumable::PREFIX) {
            let mut copy = [0; 64];
            let id = detach(id, &mut copy);
            return self.route_upload(ex, &id).await;
        }
        let Some(raw) = path.strip_prefix("/files/") else {
            if path == "/files" {
                return ex
                    .respond(StatusCode::MOVED_PERMANENTLY)
                    .header("location", "/files/")
                    .empty()
                    .await;
            }
            return reply::error(ex, Problem::NotFound, "not found", &[]).await;
        };
        // ALLOCATION: the decoded path (the store keeps it as a `StorePath` anyway).
        let target = Target::parse(raw);
        self.route_files(ex, target).await
    }

    /// `/uploads/{id}`: a resumable upload resource, written to whatever the method.
    async fn route_upload(&self, ex: &mut Exchange<'_>, id: &str) -> Result<(), weir::Error> {
        let auth = self.auth();
        let caller = match super::auth::authorization(ex.request()) {
            Ok(a) => auth.caller(a, Access::Write),
            Err(message) => {
                return reply::error(ex, Problem::BadRequest, message, &[]).await;
            }
        };
        // The write scope here, and for a prefix token the upload's target (`resumable.rs`,
        // once it is read).
        match caller.check(Access::Write, None) {
            Verdict::Allowed => {}
            Verdict::Unauthorized => return unauthorized(ex).await,
            Verdict::Forbidden => return forbidden(ex).await,
        }
        with_uploads!(
            self,
            s => resumable::serve(self, s, ex, id, caller).await,
            off(why) => resumable::unavailable(ex, why).await
        )
    }

    /// `/files/...`: the method, the credential, the path and the scope (in that order, see the
    /// module doc), the pre-upload hook, then a resumable creation or the store's route.
    async fn route_files(
        &self,
        ex: &mut Exchange<'_>,
        target: Result<Target, super::target::TargetError>,
    ) -> Result<(), weir::Error> {
        let access = match *ex.request().method() {
            Method::GET | Method::HEAD => Access::Read,
            Method::PUT | Method::POST => Access::Write,
            Method::DELETE => Access::Delete,
            _ => return method_not_allowed(ex, "GET, HEAD, PUT, POST, DELETE").await,
        };
        let auth = self.auth();
        let authorization = match super::auth::authorization(ex.request()) {
            Ok(a) => a,
            Err(message) => return reply::error(ex, Problem::BadRequest, message, &[]).await,
        };
        // 401 before the path is looked at; 403 (scope, prefix) once it is decoded.
        let mut credential = auth.identify(authorization);
        if credential.is_none() && access == Access::Read {
            // The page's cookie, for its download links: reads only (auth.rs says why).
            credential = auth.identify_cookie(ex.request());
        }
        // A token that is not known is refused even where none is needed (public reads): the
        // client learns its mistake instead of being served as anonymous.
        if credential.is_none() && (auth.required(access) || auth.rejects(authorization)) {
            return unauthorized(ex).await;
        }
        let target = match target {
            Ok(t) => t,
            Err(e) => return reply::error(ex, Problem::InvalidPath, e.as_str(), &[]).await,
        };
        let store_path = match &target {
            Target::Root => "",
            Target::File(p) | Target::Dir(p) => p.as_str(),
        };
        if auth.required(access) && !credential.is_some_and(|c| c.allows(access, Some(store_path)))
        {
            return forbidden(ex).await;
        }
        // A `create`-only token's uploads must not be able to replace: the store judges
        // `If-None-Match: *` atomically with the commit (`preconditions.rs`), so only such
        // uploads are let through (a folder's creation replaces nothing).
        let folder = matches!(
            (ex.request().method(), &target),
            (&Method::PUT, Target::Dir(_))
        );
        if access == Access::Write
            && !folder
            && credential.is_some_and(|c| !c.may_replace())
            && !creates_only(ex.request())
        {
            let detail = "this token may create files but not replace them: send \
                          If-None-Match: * (an existing file then answers 412)";
            return reply::error(ex, Problem::Forbidden, detail, &[]).await;
        }
        if let Some(refused) = self.ask_pre_upload(ex, &target, credential).await {
            return refused;
        }
        let method = ex.request().method().clone();
        // A resumable upload's creation, with either store.
        let creation = match (&method, &target) {
            (&Method::PUT, Target::File(_)) => resumable::upload_complete(ex),
            (&Method::POST, _) => resumable::post_creation(ex),
            _ => None,
        };
        if let Some(complete) = creation {
            return with_uploads!(
                self,
                s => resumable::create_at(self, s, ex, target, complete).await,
                off(why) => resumable::unavailable(ex, why).await
            );
        }
        with_files!(self, store => files::serve(self, store, ex, method, target).await)
    }

    /// `--pre-upload-hook` for an upload (`PUT` of a file, `POST`), before its body: `Some`
    /// once a refusal was answered.
    async fn ask_pre_upload(
        &self,
        ex: &mut Exchange<'_>,
        target: &Target,
        credential: Option<&Credential>,
    ) -> Option<Result<(), weir::Error>> {
        let uploads = matches!(
            (ex.request().method(), target),
            (&Method::PUT, Target::File(_)) | (&Method::POST, _)
        );
        let hook = self.pre_upload.as_ref().filter(|_| uploads)?;
        let kind = if *ex.request().method() == Method::POST {
            match resumable::post_creation(ex) {
                Some(_) => "resumable",
                None => "form",
            }
        } else if resumable::upload_complete(ex).is_some() {
            "resumable"
        } else {
            "put"
        };
        // A resumable upload's whole length when it declares one, else this request's.
        let declared = ex
            .request()
            .header_str("upload-length")
            .and_then(|v| v.trim().parse().ok());
        let length = match ex.request().framing() {
            _ if kind == "resumable" && declared.is_some() => declared,
            weir::Framing::Length(n) => Some(n),
            _ => None,
        };
        let ask = super::pre_upload::Ask {
            kind,
            method: ex.request().method().as_str(),
            path: match target {
                Target::Root => "",
                Target::File(p) | Target::Dir(p) => p.as_str(),
            },
            length,
            client: super::pre_upload::client(ex.peer_addr()),
            credential,
        };
        let answer = hook.ask(&ask).await;
        super::pre_upload::refusal(ex, answer, &[]).await
    }

    /// `/tus` and `/tus/...`: tus's one route (`tus.rs`), over whichever resumable uploads
    /// this service has (the bucket's with `--store s3://`, else the local store's).
    async fn route_tus(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        #[cfg(feature = "s3")]
        if matches!(
            self.uploads(),
            super::service::Uploads::Off(super::service::NoUploads::NotWithThisStore)
        ) {
            return super::service::not_implemented(ex, "a tus upload").await;
        }
        // tus's token rule: that of writes, for every request but OPTIONS (discovery). A
        // prefix token is judged on the upload's target by `tus.rs`: at creation from
        // `Upload-Metadata`, for an upload by id from its record.
        let auth: Arc<Auth> = self.auth();
        let caller = match super::auth::authorization(ex.request()) {
            Ok(a) => auth.caller(a, Access::Write),
            Err(message) => {
                return reply::error(ex, Problem::BadRequest, message, &[]).await;
            }
        };
        let mut copy = [0; 64];
        let path = ex.request().path();
        let rest = detach(path.get(tus::PREFIX.len()..).unwrap_or(""), &mut copy);
        // tus has no precondition that would keep a `create`-only token from replacing.
        let verdict = match caller {
            super::auth::Caller::Known(c) if !c.may_replace() => Verdict::Forbidden,
            _ => caller.check(Access::Write, None),
        };
        with_uploads!(
            self,
            s => tus::serve(self, s, ex, &rest, caller, verdict).await,
            off(_) => tus::unavailable(self, ex, verdict).await
        )
    }
}

/// `s` (an upload id from the request's path), copied so that the request can be borrowed
/// mutably again: into `buf` when it fits (an id is 32 hex digits), so that requests on an
/// upload allocate nothing for it; a longer one, which names no upload, into a `String`.
fn detach<'a>(s: &str, buf: &'a mut [u8; 64]) -> std::borrow::Cow<'a, str> {
    match buf.get_mut(..s.len()) {
        Some(copy) => {
            copy.copy_from_slice(s.as_bytes());
            // A copy of a whole `str`.
            std::borrow::Cow::Borrowed(std::str::from_utf8(copy).expect("copied from a str"))
        }
        // ALLOCATION: only for a path that names no upload.
        None => std::borrow::Cow::Owned(s.to_owned()),
    }
}

/// Whether the request is an upload that cannot replace a file: `If-None-Match: *` (RFC 9110
/// §13.1.2), the one field value `*`.
fn creates_only(request: &weir::Request) -> bool {
    let mut values = request.header_all("if-none-match");
    values.next().is_some_and(|v| v.trim_ascii() == b"*") && values.next().is_none()
}
