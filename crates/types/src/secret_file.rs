//! Secrets at rest in files: the master key and the pepper.

use std::path::Path;

/// Write `text` to a new owner-only file (never over an existing one).
pub fn write_private(file: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(d) = file.parent() {
        std::fs::create_dir_all(d)?;
    }
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(file)?.write_all(text.as_bytes())?;
    Ok(())
}
