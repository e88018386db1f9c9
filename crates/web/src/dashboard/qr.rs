//! QR codes of wallet addresses, drawn as SVG by the binary.

use qrcode::render::svg;
use qrcode::QrCode;

/// The SVG element (no XML prologue) encoding `text`, labelled for screen
/// readers.
pub fn svg(text: &str, label: &str) -> String {
    let Ok(code) = QrCode::new(text.as_bytes()) else { return String::new() };
    let drawn = code.render::<svg::Color>().min_dimensions(168, 168).quiet_zone(true).build();
    let start = drawn.find("<svg").unwrap_or(0);
    let escaped = label.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;");
    drawn[start..].replacen("<svg", &format!("<svg role=\"img\" aria-label=\"{escaped}\""), 1)
}
