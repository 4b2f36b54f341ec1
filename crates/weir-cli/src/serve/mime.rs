//! `Content-Type` by file extension: the common types, `application/octet-stream` otherwise.
//! Text types carry `charset=utf-8`. Every file response also carries
//! `X-Content-Type-Options: nosniff` and a sandboxing CSP (see `download`), so an uploaded HTML
//! file cannot run scripts in the service's origin.

/// The media type for a file name.
pub(crate) fn content_type(name: &str) -> &'static str {
    let Some((_, ext)) = name.rsplit_once('.') else {
        return "application/octet-stream";
    };
    let mut lower = [0u8; 8];
    if ext.len() > lower.len() {
        return "application/octet-stream";
    }
    for (l, b) in lower.iter_mut().zip(ext.bytes()) {
        *l = b.to_ascii_lowercase();
    }
    match &lower[..ext.len()] {
        b"txt" | b"log" | b"md" => "text/plain; charset=utf-8",
        b"html" | b"htm" => "text/html; charset=utf-8",
        b"css" => "text/css; charset=utf-8",
        b"csv" => "text/csv; charset=utf-8",
        b"js" | b"mjs" => "text/javascript; charset=utf-8",
        b"json" => "application/json",
        b"xml" => "application/xml",
        b"pdf" => "application/pdf",
        b"zip" => "application/zip",
        b"gz" | b"tgz" => "application/gzip",
        b"tar" => "application/x-tar",
        b"zst" => "application/zstd",
        b"xz" => "application/x-xz",
        b"bz2" => "application/x-bzip2",
        b"7z" => "application/x-7z-compressed",
        b"iso" => "application/x-iso9660-image",
        b"wasm" => "application/wasm",
        b"png" => "image/png",
        b"jpg" | b"jpeg" => "image/jpeg",
        b"gif" => "image/gif",
        b"webp" => "image/webp",
        b"avif" => "image/avif",
        b"svg" => "image/svg+xml",
        b"ico" => "image/x-icon",
        b"mp4" | b"m4v" => "video/mp4",
        b"webm" => "video/webm",
        b"mkv" => "video/x-matroska",
        b"mov" => "video/quicktime",
        b"mp3" => "audio/mpeg",
        b"ogg" | b"oga" => "audio/ogg",
        b"wav" => "audio/wav",
        b"flac" => "audio/flac",
        b"woff" => "font/woff",
        b"woff2" => "font/woff2",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::content_type;

    #[test]
    fn by_extension() {
        assert_eq!(content_type("a.txt"), "text/plain; charset=utf-8");
        assert_eq!(content_type("dir.v2/IMG.JPG"), "image/jpeg");
        assert_eq!(content_type("archive.tar.gz"), "application/gzip");
        assert_eq!(content_type("noext"), "application/octet-stream");
        assert_eq!(content_type("x.unknownlong"), "application/octet-stream");
        assert_eq!(content_type("trailingdot."), "application/octet-stream");
    }
}
