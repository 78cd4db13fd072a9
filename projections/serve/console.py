def routes(): return []
