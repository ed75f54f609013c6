package main

import (
	"github.com/slackapprove/slackbot/bench/internal/benchredis"

	"github.com/redis/go-redis/v9"
)

// redisClient is the client the measurement uses.
type redisClient = *redis.Client

// startRedis starts the measurement's redis-server.
func startRedis() (*redisServer, error) {
	s, err := benchredis.Start("")
	if err != nil {
		return nil, err
	}
	return &redisServer{s}, nil
}

// redisServer is the measurement's redis-server.
type redisServer struct{ *benchredis.Server }

func (s *redisServer) client() redisClient {
	return redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 64})
}

func (s *redisServer) stop() { s.Stop() }
