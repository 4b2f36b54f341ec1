//! [`ServeConfig`]: `weir serve`'s arguments checked into what the service is built from (the
//! flags, environment and config file already merged by `config_file.rs`), and
//! [`Connections`], the library's connection settings it exposes as flags.

use super::*;

/// Everything `weir serve` needs, from the command line and the environment.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Plain HTTP listeners (HTTPS when `tls` is set and `listen_tls` is empty).
    pub listen: Vec<String>,
    /// HTTPS listeners beside the plain ones.
    pub listen_tls: Vec<String>,
    pub unix: Option<PathBuf>,
    pub root: PathBuf,
    pub max_upload: u64,
    pub max_storage: Option<u64>,
    /// `--zip-max-entries`.
    pub zip_max_entries: u64,
    pub pause_threshold: usize,
    pub hash: bool,
    /// Uploads over the Unix socket may pass the open file instead of its bytes
    /// (`serve/routes/files/upload/passed_file.rs`); off with `--no-passed-fds`.
    pub passed_fds: bool,
    pub token: Option<String>,
    /// `--public-read`: reads need no token even when some are configured.
    pub public_read: bool,
    /// `--token-read` was given: deprecated (its behaviour is the default), warned about at
    /// start.
    pub token_read: bool,
    /// From `--token-file`.
    pub credentials: Vec<Credential>,
    /// `--token-file`, read again on SIGHUP (`reload.rs`).
    pub token_file: Option<PathBuf>,
    pub allow_anonymous_write: bool,
    /// Certificate chain and key (PEM) for HTTPS on `listen`.
    pub tls: Option<(PathBuf, PathBuf)>,
    pub runtime: Runtime,
    /// Resumable uploads' expiry and append limits.
    pub resumable: ResumableOptions,
    /// The access log: `None` for none, else where (`None` inside: stderr) and how.
    pub access_log: Option<(Option<PathBuf>, LogFormat)>,
    /// `/metrics` on a listener of its own.
    pub metrics_listen: Option<String>,
    /// `--s3-api`: the S3-compatible API's listener and addressing (`routes/s3/`).
    pub s3_api: Option<S3ApiConfig>,
    /// `--hook-command` and its timeout.
    pub hook: Option<(PathBuf, std::time::Duration)>,
    /// `--hook-url` and its timeout, attempts and backoff.
    pub webhook: Option<WebhookOptions>,
    /// `--pre-upload-hook` and its timeout.
    pub pre_upload: Option<(PathBuf, std::time::Duration)>,
    /// The server library's timeouts, rates and limits.
    pub connections: Connections,
    /// Origins whose pages may use the service (`--cors-origin`).
    pub cors: Cors,
    /// `--allow-cross-site-writes`: browser pages of any origin may write.
    pub allow_cross_site_writes: bool,
    /// `--allowed-host` names (`host_check.rs`).
    pub allowed_hosts: Vec<String>,
    /// `--store s3://...`: the bucket the files go to (`s3_config.rs`), and the URL as given.
    #[cfg(feature = "s3")]
    pub s3: Option<(weir_store::S3Config, String)>,
    /// `--s3-sweep-after`.
    #[cfg(feature = "s3")]
    pub s3_sweep_after: std::time::Duration,
    /// `--s3-upload-lease`: how long a resumable append's hold on an upload outlives its
    /// node's last sign of life (`resumable.rs` over `S3Resumables`).
    #[cfg(feature = "s3")]
    pub s3_upload_lease: std::time::Duration,
}

/// The library's connection settings that `weir serve` exposes as flags.
#[derive(Clone, Debug)]
pub struct Connections {
    pub head_timeout: std::time::Duration,
    pub idle_timeout: std::time::Duration,
    /// Bytes per second; 0: no minimum.
    pub min_body_rate: u64,
    pub min_response_rate: u64,
    pub max_connections: usize,
    pub shutdown_grace: std::time::Duration,
}

impl ServeConfig {
    /// Checks the arguments (flags, environment and config file merged by `config_file.rs`).
    pub fn from_args(args: ServeArgs) -> Result<Self, ServeError> {
        let token = args.token;
        if token.as_deref() == Some("") {
            return Err(ServeError(
                "--token (or WEIR_TOKEN) must not be empty".into(),
            ));
        }
        let credentials = match &args.token_file {
            None => Vec::new(),
            // One line per mistake (`main.rs` prefixes the first with "weir: ").
            Some(path) => {
                auth::read_token_file(path).map_err(|e| ServeError(e.replace('\n', "\nweir: ")))?
            }
        };
        if args.token_read && token.is_none() && credentials.is_empty() {
            return Err(ServeError(
                "--token-read needs a token (--token, WEIR_TOKEN or --token-file)".into(),
            ));
        }
        if args.public_read && token.is_none() && args.token_file.is_none() {
            return Err(ServeError(
                "--public-read needs a token (--token, WEIR_TOKEN or --token-file): without \
                 one, everything is open already"
                    .into(),
            ));
        }
        if args.max_upload == 0 {
            return Err(ServeError("--max-upload must be at least 1 byte".into()));
        }
        let pause_threshold = usize::try_from(args.pause_threshold)
            .ok()
            .filter(|&t| t >= weir::Config::MIN_PAUSE_THRESHOLD)
            .ok_or_else(|| {
                ServeError(format!(
                    "--pause-threshold must be between {} and {} bytes",
                    weir::Config::MIN_PAUSE_THRESHOLD,
                    usize::MAX
                ))
            })?;
        if args.max_connections == 0 {
            return Err(ServeError("--max-connections must be at least 1".into()));
        }
        let cors = Cors::new(&args.cors_origin).map_err(ServeError)?;
        // Checked here so that a mistake stops the start; built again in `run`.
        HostCheck::new(&args.allowed_host).map_err(ServeError)?;
        let s3 = s3_config::from_args(&args.store)?;
        #[cfg(feature = "s3")]
        let s3 = s3.zip(args.store.url.clone());
        #[cfg(not(feature = "s3"))]
        let _ = s3;
        Ok(Self {
            #[cfg(feature = "s3")]
            s3,
            #[cfg(feature = "s3")]
            s3_sweep_after: std::time::Duration::from_secs(args.store.s3_sweep_after),
            #[cfg(feature = "s3")]
            s3_upload_lease: std::time::Duration::from_secs(args.store.s3_upload_lease),
            cors,
            allow_cross_site_writes: args.allow_cross_site_writes,
            allowed_hosts: args.allowed_host,
            listen: args.listen,
            listen_tls: args.listen_tls,
            unix: args.unix,
            root: args.root,
            max_upload: args.max_upload,
            max_storage: args.max_storage,
            zip_max_entries: args.zip_max_entries,
            pause_threshold,
            hash: !args.no_hash,
            passed_fds: !args.no_passed_fds,
            token,
            public_read: args.public_read,
            token_read: args.token_read,
            credentials,
            token_file: args.token_file,
            allow_anonymous_write: args.allow_anonymous_write,
            tls: args.tls_cert.zip(args.tls_key),
            runtime: args.runtime,
            resumable: ResumableOptions {
                expiry: args.resumable_expiry,
                max_append: args.resumable_max_append,
                min_append: args.resumable_min_append,
            },
            access_log: (!args.no_access_log).then_some((args.access_log, args.log_format)),
            metrics_listen: args.metrics_listen,
            s3_api: args.s3_api.map(|listen| S3ApiConfig {
                listen,
                domains: args
                    .s3_api_domain
                    .iter()
                    .map(|d| d.trim().trim_end_matches('.').to_ascii_lowercase())
                    .filter(|d| !d.is_empty())
                    .collect(),
                region: args.s3_api_region,
                multipart_expiry: std::time::Duration::from_secs(args.s3_api_multipart_expiry),
                keep_alive: std::time::Duration::from_secs(args.s3_api_keep_alive),
            }),
            hook: args
                .hook_command
                .map(|program| (program, args.hook_timeout)),
            webhook: args.hook_url.map(|url| WebhookOptions {
                url,
                timeout: args.hook_timeout,
                attempts: args.hook_attempts,
                backoff: args.hook_backoff,
            }),
            pre_upload: args
                .pre_upload_hook
                .map(|program| (program, args.pre_upload_timeout)),
            connections: Connections {
                head_timeout: args.head_timeout,
                idle_timeout: args.idle_timeout,
                min_body_rate: args.min_body_rate,
                min_response_rate: args.min_response_rate,
                max_connections: args.max_connections,
                shutdown_grace: args.shutdown_grace,
            },
        })
    }

    /// The server library's configuration for this service.
    pub fn weir_config(&self) -> weir::Config {
        let mut c = weir::Config::default();
        let conn = &self.connections;
        c.pause_threshold = self.pause_threshold;
        c.reuse_port = self.runtime == Runtime::PerCore;
        c.head_timeout = conn.head_timeout;
        c.keep_alive_timeout = conn.idle_timeout;
        c.max_connections = conn.max_connections;
        c.shutdown_grace = conn.shutdown_grace;
        // On by default: it only concerns the Unix socket, whose file permissions already say
        // who may upload, and a passed file gives the server no byte the client could not
        // have streamed; `passed_file.rs` checks what the descriptor is before reading it.
        c.accept_passed_fds = self.passed_fds;
        // The rate flags set the rate; the grace stays the library's.
        let rate = |default: Option<weir::DataRate>, bytes_per_second: u64| {
            (bytes_per_second > 0).then(|| {
                let grace = default.map_or(std::time::Duration::from_secs(5), |d| d.grace);
                weir::DataRate::new(bytes_per_second, grace)
            })
        };
        c.min_body_rate = rate(c.min_body_rate, conn.min_body_rate);
        c.min_response_rate = rate(c.min_response_rate, conn.min_response_rate);
        c
    }

    /// The handler's options.
    pub fn service_options(&self) -> ServiceOptions {
        ServiceOptions {
            max_upload: self.max_upload,
            hash: self.hash,
            auth: Auth::new(self.token.as_deref(), self.public_read)
                .with_credentials(self.credentials.clone()),
            limited_storage: self.max_storage.is_some(),
        }
    }
}
