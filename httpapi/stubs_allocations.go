package httpapi

import "net/http"

// Placeholders until the allocation family lands.
func (s *Server) listProviderUsages(w http.ResponseWriter, r *http.Request) { notImplemented(w, r) }
func (s *Server) listProviderAllocations(w http.ResponseWriter, r *http.Request) {
	notImplemented(w, r)
}
func (s *Server) setAllocations(w http.ResponseWriter, r *http.Request)         { notImplemented(w, r) }
func (s *Server) getConsumerAllocations(w http.ResponseWriter, r *http.Request) { notImplemented(w, r) }
func (s *Server) setConsumerAllocations(w http.ResponseWriter, r *http.Request) { notImplemented(w, r) }
func (s *Server) deleteConsumerAllocations(w http.ResponseWriter, r *http.Request) {
	notImplemented(w, r)
}
func (s *Server) getTotalUsages(w http.ResponseWriter, r *http.Request) { notImplemented(w, r) }
func (s *Server) reshape(w http.ResponseWriter, r *http.Request)        { notImplemented(w, r) }
