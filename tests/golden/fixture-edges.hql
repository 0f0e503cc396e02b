// vault: vault
// Reference 9.4: bearer-tokens links to oauth and http-headers; oauth's link and the
// oauth-defines-bearer relation both point at it.
// expected-type: Data
// expected-json: {"uplinks": 2, "downlinks": 2}

{
    uplinks: [[bearer-tokens]] | uplinks | count,
    downlinks: [[bearer-tokens]] | downlinks | count,
}
