package main

import (
	"github.com/spf13/cobra"
)

func newStoreCommand(root *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Manage the database itself: migrate the PostgreSQL schema, partition its families table, copy every record to another database, compact a bbolt file",
	}
	cmd.AddCommand(newStoreMigrateCommand(root), newStoreCopyCommand(root), newStorePartitionCommand(root), newStoreCompactCommand(root))
	return cmd
}
