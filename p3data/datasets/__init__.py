"""The rows side: which datasets T0 used and how their rows look (`catalog`, `schema`), where
rows come from (`stores`: a local or remote mirror, manual files, the Hub), reading row files
(`rows`) and the bundled sample rows (`samples`)."""
