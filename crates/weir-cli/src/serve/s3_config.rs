//! `--store s3://BUCKET/PREFIX` and the `--s3-*` flags into weir-store's `S3Config`, with the
//! usual AWS environment variables where neither a flag nor a `WEIR_` variable says.

use super::ServeError;
use crate::cli::StoreArgs;

/// The S3 store to serve from, if `--store` names one.
#[cfg(feature = "s3")]
pub(super) fn from_args(args: &StoreArgs) -> Result<Option<weir_store::S3Config>, ServeError> {
    let Some(url) = &args.url else {
        return Ok(None);
    };
    let rest = url.strip_prefix("s3://").ok_or_else(|| {
        ServeError(format!(
            "--store {url:?}: expected s3://BUCKET or s3://BUCKET/PREFIX"
        ))
    })?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(ServeError(format!("--store {url:?}: no bucket")));
    }
    let aws = |names: &[&str]| names.iter().find_map(|n| std::env::var(n).ok());
    let region = args
        .s3_region
        .clone()
        .or_else(|| aws(&["AWS_REGION", "AWS_DEFAULT_REGION"]))
        .unwrap_or_else(|| "us-east-1".to_owned());
    let (endpoint, path_style) = match args
        .s3_endpoint
        .clone()
        .or_else(|| aws(&["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]))
    {
        Some(e) => (e, !args.s3_virtual_hosted),
        // AWS itself: its regional endpoint, virtual-hosted.
        None => (format!("https://s3.{region}.amazonaws.com"), false),
    };
    let access_key = args
        .s3_access_key_id
        .clone()
        .or_else(|| aws(&["AWS_ACCESS_KEY_ID"]))
        .ok_or_else(|| {
            ServeError(
                "--store s3://: no access key (--s3-access-key-id or AWS_ACCESS_KEY_ID)".into(),
            )
        })?;
    let secret_key = args
        .s3_secret_access_key
        .clone()
        .or_else(|| aws(&["AWS_SECRET_ACCESS_KEY"]))
        .ok_or_else(|| {
            ServeError(
                "--store s3://: no secret key (WEIR_S3_SECRET_ACCESS_KEY or AWS_SECRET_ACCESS_KEY)"
                    .into(),
            )
        })?;
    const MIN_PART: u64 = 5 << 20;
    const MAX_PART: u64 = 5 << 30;
    if !(MIN_PART..=MAX_PART).contains(&args.s3_part_size) {
        return Err(ServeError(
            "--s3-part-size must be from 5MiB to 5GiB (S3's part limits)".into(),
        ));
    }
    if args.s3_timeout == 0 {
        return Err(ServeError("--s3-timeout must be at least 1 second".into()));
    }
    if !(1..=64).contains(&args.s3_parts_in_flight) {
        return Err(ServeError(
            "--s3-parts-in-flight must be from 1 to 64".into(),
        ));
    }
    Ok(Some(weir_store::S3Config {
        endpoint,
        region,
        bucket: bucket.to_owned(),
        prefix: prefix.to_owned(),
        access_key,
        secret_key,
        session_token: aws(&["AWS_SESSION_TOKEN"]),
        part_size: usize::try_from(args.s3_part_size).unwrap_or(usize::MAX),
        parts_in_flight: args.s3_parts_in_flight,
        path_style,
        request_timeout: std::time::Duration::from_secs(args.s3_timeout),
    }))
}

/// Without the `s3` feature, `--store` is refused.
#[cfg(not(feature = "s3"))]
pub(super) fn from_args(args: &StoreArgs) -> Result<Option<()>, ServeError> {
    match &args.url {
        None => Ok(None),
        Some(_) => Err(ServeError(
            "--store: this weir was built without the `s3` feature".into(),
        )),
    }
}
