package httpapi

import "net/http"

// Placeholders until the resource provider family lands.
func (s *Server) listResourceProviders(w http.ResponseWriter, r *http.Request)  { notImplemented(w, r) }
func (s *Server) createResourceProvider(w http.ResponseWriter, r *http.Request) { notImplemented(w, r) }
func (s *Server) getResourceProvider(w http.ResponseWriter, r *http.Request)    { notImplemented(w, r) }
func (s *Server) deleteResourceProvider(w http.ResponseWriter, r *http.Request) { notImplemented(w, r) }
func (s *Server) updateResourceProvider(w http.ResponseWriter, r *http.Request) { notImplemented(w, r) }
func (s *Server) getInventories(w http.ResponseWriter, r *http.Request)         { notImplemented(w, r) }
func (s *Server) createInventory(w http.ResponseWriter, r *http.Request)        { notImplemented(w, r) }
func (s *Server) setInventories(w http.ResponseWriter, r *http.Request)         { notImplemented(w, r) }
func (s *Server) deleteInventories(w http.ResponseWriter, r *http.Request)      { notImplemented(w, r) }
func (s *Server) getInventory(w http.ResponseWriter, r *http.Request)           { notImplemented(w, r) }
func (s *Server) updateInventory(w http.ResponseWriter, r *http.Request)        { notImplemented(w, r) }
func (s *Server) deleteInventory(w http.ResponseWriter, r *http.Request)        { notImplemented(w, r) }
func (s *Server) getAggregates(w http.ResponseWriter, r *http.Request)          { notImplemented(w, r) }
func (s *Server) setAggregates(w http.ResponseWriter, r *http.Request)          { notImplemented(w, r) }
func (s *Server) listProviderTraits(w http.ResponseWriter, r *http.Request)     { notImplemented(w, r) }
func (s *Server) updateProviderTraits(w http.ResponseWriter, r *http.Request)   { notImplemented(w, r) }
func (s *Server) deleteProviderTraits(w http.ResponseWriter, r *http.Request)   { notImplemented(w, r) }
