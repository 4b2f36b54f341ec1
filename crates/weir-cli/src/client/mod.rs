//! `weir put` and `weir get`: a small blocking HTTP/1.1 client.
pub fn put(_args: crate::cli::PutArgs) -> Result<(), Box<dyn std::error::Error>> {
    Ok(())
}
pub fn get(_args: crate::cli::GetArgs) -> Result<(), Box<dyn std::error::Error>> {
    Ok(())
}
