#!/usr/bin/env bash
# Usage: compare.sh TLBPACK BUILD_DIR
. "$(dirname "$0")/lib.sh"
skip "written once tlbsim --compare lands"
