// Google Play on loopback (issue 54): under construction.

/// Placeholder until the Play simulator lands.
enum PlaySimulatorPlaceholder {}
