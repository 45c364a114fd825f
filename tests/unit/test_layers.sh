#!/usr/bin/env bash
# test_layers - the include rules of docs/design.md hold (check_layers.sh).
exec bash "$(dirname "$0")/../check_layers.sh"
