package main

import (
	"github.com/spf13/cobra"
)

func newStoreCopyCommand(root *rootOptions) *cobra.Command {
	_ = root
	return &cobra.Command{Use: "copy", Hidden: true}
}
