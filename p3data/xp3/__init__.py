"""xP3 and xP3mt, mT0's multilingual mixtures, compiled like T0's P3."""
