package issuer

import (
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// Placeholders until the token endpoint lands; the engineer writing
// token.go deletes this file.

type metrics struct{}

func newMetrics(prometheus.Registerer) *metrics { return &metrics{} }

func (s *Server) handleToken(c echo.Context) error      { return echo.ErrNotImplemented }
func (s *Server) handleRevoke(c echo.Context) error     { return echo.ErrNotImplemented }
func (s *Server) handleIntrospect(c echo.Context) error { return echo.ErrNotImplemented }
func (s *Server) handleMetadata(c echo.Context) error   { return echo.ErrNotImplemented }
